package keys

// Dashboard names the keys the dashboard keeps its own state in: sessions,
// session epochs (revocation), sign-in throttles and the audit logs. They
// live under "<prefix>::dashboard:", an empty queue name, so no queue's
// keys can collide with them and queue discovery (QueueOf) skips them.
type Dashboard struct{ base string }

// DashboardOf returns the dashboard's keys under prefix ("" = DefaultPrefix).
func DashboardOf(prefix string) Dashboard {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return Dashboard{base: prefix + "::dashboard:"}
}

// Session is the hash of one sign-in session, by the SHA-256 of its id.
func (d Dashboard) Session(idHash string) string { return d.base + "session:" + idHash }

// Epochs is the hash of session epochs ("*" for everyone, "u:<name>" per
// user): a session older than its epoch is revoked.
func (d Dashboard) Epochs() string { return d.base + "epochs" }

// Throttle is the hash counting failed sign-ins of one client or user
// (kind "client" or "user").
func (d Dashboard) Throttle(kind, id string) string { return d.base + "throttle:" + kind + ":" + id }

// AuditLog is the stream of actions by signed-in users.
func (d Dashboard) AuditLog() string { return d.base + "audit" }

// SecurityLog is the stream of security events: sign-ins, failed or not,
// requests without valid credentials, throttled clients.
func (d Dashboard) SecurityLog() string { return d.base + "security" }

// Idempotency is the string holding the answer to a mutating request sent
// with an Idempotency-Key, by the SHA-256 of who sent it, where and the key.
func (d Dashboard) Idempotency(hash string) string { return d.base + "idem:" + hash }
