package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/keys"
)

// store keeps the dashboard's own state in Redis, next to the queues, so
// it survives restarts and is shared by every dashboard over the same
// Redis: sessions (revocable), sign-in throttles and the audit logs.
type store struct {
	rdb redis.UniversalClient
	k   keys.Dashboard
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// storedSession is a sign-in session as Redis keeps it (by the SHA-256 of
// its id, so a leaked dump holds no usable cookie).
type storedSession struct {
	User string
	Role Role
	CSRF string
}

const (
	epochAll     = "*"
	epochUserPfx = "u:"
)

// createSession stores a new session for u and returns its id and CSRF
// token. The session records the current epochs; bumping one revokes it.
func (s *store) createSession(ctx context.Context, u *User) (id, csrf string, err error) {
	epochs, err := s.rdb.HMGet(ctx, s.k.Epochs(), epochAll, epochUserPfx+u.Name).Result()
	if err != nil {
		return "", "", fmt.Errorf("read session epochs: %w", err)
	}
	id, csrf = randomToken(), randomToken()
	key := s.k.Session(hashID(id))
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "user", u.Name, "role", string(u.Role), "csrf", csrf,
			"eall", epochString(epochs[0]), "euser", epochString(epochs[1]))
		p.PExpire(ctx, key, sessionTTL)
		return nil
	})
	if err != nil {
		return "", "", fmt.Errorf("store session: %w", err)
	}
	return id, csrf, nil
}

func epochString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "0"
}

// readSession finds the session with id; ok is false when there is none,
// it expired or was revoked.
func (s *store) readSession(ctx context.Context, id string) (storedSession, bool, error) {
	var sess, epochs *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		sess = p.HGetAll(ctx, s.k.Session(hashID(id)))
		epochs = p.HGetAll(ctx, s.k.Epochs())
		return nil
	})
	if err != nil {
		return storedSession{}, false, fmt.Errorf("read session: %w", err)
	}
	m, e := sess.Val(), epochs.Val()
	if len(m) == 0 {
		return storedSession{}, false, nil
	}
	cur := func(f string) string {
		if v, ok := e[f]; ok {
			return v
		}
		return "0"
	}
	if m["eall"] != cur(epochAll) || m["euser"] != cur(epochUserPfx+m["user"]) {
		return storedSession{}, false, nil
	}
	return storedSession{User: m["user"], Role: Role(m["role"]), CSRF: m["csrf"]}, true, nil
}

// deleteSession ends one session.
func (s *store) deleteSession(ctx context.Context, id string) error {
	if err := s.rdb.Del(ctx, s.k.Session(hashID(id))).Err(); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// revokeSessions ends every session of user, or everyone's when user is "".
func (s *store) revokeSessions(ctx context.Context, user string) error {
	field := epochAll
	if user != "" {
		field = epochUserPfx + user
	}
	err := bumpEpoch.Run(ctx, s.rdb, []string{s.k.Epochs()}, field, epochCallPfx+field, randomToken()).Err()
	if err != nil {
		return fmt.Errorf("revoke sessions: %w", err)
	}
	return nil
}

// epochCallPfx starts the field beside an epoch that keeps the token of
// the last revocation that bumped it ("c:*", "c:u:<name>"): no epoch field
// starts so.
const epochCallPfx = "c:"

// bumpEpoch bumps one epoch (ARGV[1]) of the epochs hash (KEYS[1]) once
// per revocation: the revocation's token (ARGV[3]) is kept in field
// ARGV[2], and a run that finds it there is go-redis resending the call
// after a lost reply, which must not bump the epoch again (a session
// signed in between the two sends would be revoked by the second).
// Dashboards before this bumped with HINCRBY and ignore the token fields.
var bumpEpoch = redis.NewScript(`
if redis.call("HGET", KEYS[1], ARGV[2]) ~= ARGV[3] then
  redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
  redis.call("HSET", KEYS[1], ARGV[2], ARGV[3])
end
return 1
`)

// Sign-in throttling: after throttleFree failures within throttleWindow, a
// client (or a user name) waits 1s, 2s, 4s, ... up to throttleMaxDelay
// after each failure before its next attempt is even checked.
const (
	throttleFree     = 5
	throttleWindow   = 15 * time.Minute
	throttleMaxDelay = 5 * time.Minute
)

func throttleDelay(failures int64) time.Duration {
	if failures < throttleFree {
		return 0
	}
	shift := failures - throttleFree
	if shift > 20 {
		return throttleMaxDelay
	}
	return min(time.Second<<shift, throttleMaxDelay)
}

// throttleKey is one throttled party: a client address or a user name.
type throttleKey struct{ kind, id string }

// clientOf is the throttled identity of a remote address: its IP, or its
// /64 for IPv6 (one host holds a whole /64).
func clientOf(remote string) throttleKey {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		host = ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return throttleKey{"client", host}
}

// throttled says how long the parties must still wait (0: not throttled).
func (s *store) throttled(ctx context.Context, now time.Time, parties ...throttleKey) (time.Duration, error) {
	cmds := make([]*redis.SliceCmd, len(parties))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, t := range parties {
			cmds[i] = p.HMGet(ctx, s.k.Throttle(t.kind, t.id), "n", "last")
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read sign-in throttle: %w", err)
	}
	var wait time.Duration
	for _, c := range cmds {
		v := c.Val()
		ns, _ := v[0].(string)
		ls, _ := v[1].(string)
		n, _ := strconv.ParseInt(ns, 10, 64)
		last, _ := strconv.ParseInt(ls, 10, 64)
		if d := time.UnixMilli(last).Add(throttleDelay(n)).Sub(now); d > wait {
			wait = d
		}
	}
	return wait, nil
}

// countFailure counts one failed sign-in on a throttle hash (KEYS[1]),
// once per attempt: the attempt's token (ARGV[1]) is kept in field "f",
// and a run that finds it there is go-redis resending the call after a
// lost reply, which must not count the failure again. ARGV[2] is the
// attempt's time (ms), ARGV[3] the window (ms). Dashboards before this
// read and write "n" and "last" alone; "f" is ignored by them.
var countFailure = redis.NewScript(`
if redis.call("HGET", KEYS[1], "f") ~= ARGV[1] then
  redis.call("HINCRBY", KEYS[1], "n", 1)
  redis.call("HSET", KEYS[1], "f", ARGV[1], "last", ARGV[2])
end
redis.call("PEXPIRE", KEYS[1], ARGV[3])
return 1
`)

// failed counts a failed sign-in against the parties, once each: one
// script call per party, whose keys need not share a cluster slot.
func (s *store) failed(ctx context.Context, now time.Time, parties ...throttleKey) error {
	attempt := randomToken()
	for _, t := range parties {
		err := countFailure.Run(ctx, s.rdb, []string{s.k.Throttle(t.kind, t.id)},
			attempt, now.UnixMilli(), throttleWindow.Milliseconds()).Err()
		if err != nil {
			return fmt.Errorf("count failed sign-in: %w", err)
		}
	}
	return nil
}

// succeeded forgets a user's failures (the client's stay until they expire:
// signing in to one's own account must not reset guesses at others).
func (s *store) succeeded(ctx context.Context, user string) error {
	return s.rdb.Del(ctx, s.k.Throttle("user", user)).Err()
}

// Audit logs. Actions by signed-in users and security events are kept
// apart, so anonymous traffic can flood only the security log.
const (
	// AuditActions is the log of mutating requests by signed-in users,
	// allowed or refused.
	AuditActions = "actions"
	// AuditSecurity is the log of sign-ins (failed or not), requests
	// without valid credentials and throttled clients.
	AuditSecurity = "security"

	auditActionsMax  = 100_000
	auditSecurityMax = 10_000
)

func (s *store) auditKey(log string) (string, int64) {
	if log == AuditSecurity {
		return s.k.SecurityLog(), auditSecurityMax
	}
	return s.k.AuditLog(), auditActionsMax
}

// appendAudit adds e to its log.
func (s *store) appendAudit(ctx context.Context, e AuditEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key, maxLen := s.auditKey(e.Log)
	// The entry gets an ID of its own: go-redis sends an XADD again when
	// its reply was lost, and with "*" the second send appended the entry
	// a second time (one action, two entries). A second send of this ID is
	// refused (it is not above the stream's top), and the entry is found
	// under it.
	id := strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + strconv.FormatUint(mrand.Uint64N(1<<47), 10)
	err = s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: maxLen, Approx: true, ID: id, Values: []any{"e", b}}).Err()
	if err != nil && strings.Contains(err.Error(), "equal or smaller than the target stream top item") {
		got, rerr := s.rdb.XRange(ctx, key, id, id).Result()
		if rerr == nil && len(got) == 1 && got[0].Values["e"] == string(b) {
			return nil // stored by an earlier send of this append
		}
		// A newer entry is on top (another dashboard's clock is ahead, or
		// it drew a larger sequence in the same millisecond): Redis's ID.
		err = s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: maxLen, Approx: true, Values: []any{"e", b}}).Err()
	}
	if err != nil {
		return fmt.Errorf("append to the %s audit log: %w", e.Log, err)
	}
	return nil
}

// readAudit reads up to limit entries of log, newest first, older than the
// entry with id before ("" = the newest). next is the cursor of the next
// page, "" at the end.
func (s *store) readAudit(ctx context.Context, log, before string, limit int) (entries []AuditEntry, next string, err error) {
	key, _ := s.auditKey(log)
	hi := "+"
	if before != "" {
		hi = "(" + before
	}
	msgs, err := s.rdb.XRevRangeN(ctx, key, hi, "-", int64(limit)+1).Result()
	if err != nil {
		return nil, "", fmt.Errorf("read the %s audit log: %w", log, err)
	}
	entries = make([]AuditEntry, 0, min(len(msgs), limit))
	for i, m := range msgs {
		if i == limit {
			next = msgs[i-1].ID
			break
		}
		var e AuditEntry
		raw, _ := m.Values["e"].(string)
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, "", errors.New("read the audit log: entry " + m.ID + " is not JSON")
		}
		e.ID = m.ID
		entries = append(entries, e)
	}
	return entries, next, nil
}
