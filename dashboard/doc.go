// Package dashboard is drover's control room: an http.Handler with a JSON
// API over inspect, an embedded UI that consumes the same API, live updates
// from the queues' events streams, /healthz, /readyz and /metrics.
//
// # Mounting
//
// [New] returns the Handler; mount it under any prefix with
// http.StripPrefix. [Server] runs it standalone with Start and Close(ctx);
// `drover dashboard` is that server.
//
//	ins, _ := inspect.New(rdb, nil)
//	h, _ := dashboard.New(ins, &dashboard.Options{Auth: &dashboard.Auth{Users: users}})
//	mux.Handle("/queues/", http.StripPrefix("/queues", h))
//
// # Pages
//
// The overview lists the queues with their counts and storm alerts. A queue
// page lists jobs per state with filters (name, failed reason, attempts
// left), paged forward and back by cursor (jobs that move meanwhile skip
// none and repeat none, and the page says the list moved), a histogram of the delayed set's due times with the clustering
// ratio, budgets near exhaustion and a live event feed. A job page is the
// retry-state inspector: retry state, attempts against budget, next run
// time, the attempt timeline drawn as a picture (each attempt, the backoff
// or gap before the next, errors), stack traces and logs. The stalled page
// shows jobs that stalled and the lock TTL of every active job. Actions ask
// for confirmation.
//
// # API
//
// The main routes are below; GET /api/openapi.json describes every route
// with its parameters, bodies and answers (TestOpenAPI holds it to the
// handler).
//
//	GET  /healthz                          no Redis, no auth
//	GET  /readyz                           pings Redis, no auth
//	GET  /metrics                          Prometheus text format (viewer)
//	GET  /api/session                      who am I, CSRF token (viewer)
//	GET  /api/overview                     queues, counts, alerts
//	GET  /api/queues/{queue}               counts, delayed stats, budgets, alerts
//	GET  /api/queues/{queue}/jobs          ?state=&filter=&name=&reason=&left=&offset=&after=&before=&limit=&asc=
//	GET  /api/queues/{queue}/jobs/{id}     job detail with timeline
//	GET  /api/queues/{queue}/stalled       stalled view
//	GET  /api/queues/{queue}/delayed       delayed-set analytics
//	GET  /api/queues/{queue}/budgets       near-exhausted budgets
//	GET  /api/queues/{queue}/events        server-sent events
//	POST /api/queues/{queue}/jobs/{id}/retry    {"resetAttempts":true,"from":"failed"} (operator)
//	POST /api/queues/{queue}/jobs/{id}/promote  (operator)
//	POST /api/queues/{queue}/jobs/{id}/cancel   {"reason","retry","from"} (operator)
//	POST /api/queues/{queue}/jobs/{id}/priority {"priority","lifo"} (operator)
//	POST /api/queues/{queue}/jobs/{id}/delay    {"delayMs"} delayed jobs (operator)
//	POST /api/queues/{queue}/retry         {"state","filter","resetAttempts","includeUnrecoverable","dryRun","limit","olderThan"} (operator)
//	POST /api/queues/{queue}/promote       (operator)
//	POST /api/queues/{queue}/jobs/{id}/remove   (admin)
//	POST /api/queues/{queue}/pause|resume  (admin)
//	POST /api/queues/{queue}/clean         {"state","grace","limit","dryRun"} (admin)
//	POST /api/queues/{queue}/drain         {"delayed","expected"} (admin)
//	POST /api/queues/{queue}/obliterate    {"force","expected"} (admin)
//	GET  /api/audit                        ?log=actions|security&before=&limit= audit log, paged (admin)
//	POST /api/sessions/revoke              {"user"} end a user's sessions, or everyone's (admin)
//	POST /api/login, /api/logout           UI sign-in with a token or name and password
//
// A POST body is one JSON object with only the fields shown (an action
// shown without fields takes no body or {}); anything else is refused with
// 400 before the action runs. While Redis cannot be reached, calls answer
// 503. The API's JSON is package inspect's: instants are epoch milliseconds,
// durations milliseconds, and a job's fields it shares with BullMQ's job
// JSON have BullMQ's names (timestamp, returnvalue, stalledCounter, ...).
// The audit log's and background operations' times are RFC 3339.
//
// # Security
//
//   - [Server] listens on 127.0.0.1 by default and refuses a non-loopback
//     address unless users are configured ([ErrInsecureBind]). On loopback
//     it accepts only loopback Host headers, against DNS rebinding.
//   - Users sign in with a bearer token or HTTP basic auth, or through the
//     UI's sign-in form, which sets an HttpOnly SameSite=Strict cookie
//     naming a session kept in Redis (under "<prefix>::dashboard:"): signing
//     out ends it for every copy of the cookie and its live-update streams
//     (within a second), signing in replaces the
//     browser's previous one, and admins end a user's or everyone's
//     sessions. Tokens and passwords have at least [MinSecretLength]
//     characters. After 5 failed sign-ins (form, basic auth or bearer
//     token) within 15 minutes, a client address, and a user name, wait 1s,
//     2s, 4s, ... up to 5 minutes per attempt: 429 with Retry-After. Roles:
//     viewer reads; operator also retries, promotes, cancels and changes a
//     job's priority or delay; admin also removes, drains,
//     cleans, pauses, resumes, obliterates and reads the audit log. Without
//     users every request has Options.AnonymousRole (viewer by default).
//   - Every mutating request must carry the X-CSRF-Token header from
//     /api/session (each session has its own), and is refused when the
//     browser says it came from another site.
//   - Every mutating request, allowed or refused, produces an [AuditEntry]:
//     who, what, when, on how many jobs and which (the first
//     [AuditJobIDsMax] of a bulk action's: retry, clean, promote-all,
//     drain), and the outcome. Entries go to
//     Options.Audit and to two capped Redis streams kept apart: actions by
//     signed-in users ([AuditActions]) and security events ([AuditSecurity]:
//     sign-ins, requests without valid credentials, throttling), so
//     anonymous traffic cannot push actions out of the audit view.
//   - [Server] serves HTTPS itself with ServerOptions.TLSCertFile and
//     TLSKeyFile (`drover dashboard --tls-cert --tls-key`); behind a TLS
//     proxy, Options.SecureCookies (`--secure-cookies`) marks the cookie
//     Secure. It bounds slow clients: headers in 5s (16 KiB), bodies in 10s
//     (1 MiB), responses in 1 min, and caps connections (ServerOptions.MaxConns),
//     closing the oldest idle or still-sending one at the cap.
//   - Options.ReadOnly refuses every mutation.
//   - The UI renders job data (names, data, failed reasons, logs) as text
//     only, under a Content-Security-Policy that allows no inline script.
package dashboard
