package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/keys"
)

// redisFlags are the --redis and --prefix flags every queue command takes.
type redisFlags struct {
	url    string
	prefix string
	// logger receives the inspector's warnings; nil = none.
	logger *slog.Logger
	// ins is the connection inspector (or queue) opened, for record.
	ins *inspect.Inspector
	// cluster is set once ins is open on a Redis Cluster.
	cluster bool
	// timeout is --timeout: how long one request may go unanswered.
	timeout time.Duration
	// serving is set by the commands that run until stopped (dashboard,
	// watch): a request that went unanswered fails alone, and the next
	// one asks Redis again, so they come back once Redis answers.
	serving bool
}

// RequestTimeoutDefault is --timeout's default. One request is a command
// or a script call (a chunk of a bulk change), which a Redis that answers
// at all answers in well under a second.
const RequestTimeoutDefault = 10 * time.Second

// RedisURLDefault is where the queue commands look for Redis when neither
// --redis nor DROVER_REDIS_URL says.
const RedisURLDefault = "redis://127.0.0.1:6379/0"

func (r *redisFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.url, "redis", envOr("DROVER_REDIS_URL", RedisURLDefault), "Redis URL, redis://[user:pass@]host:port/db or rediss://..., or host:port, or unix:///path/redis.sock?db=N; any node of a Redis Cluster; Sentinel: redis://sentinel:26379/db?master_name=NAME[&addr=sentinel2:26379...][&password=MASTER_PASSWORD] (env DROVER_REDIS_URL)")
	hidePassword(fs, "redis")
	fs.StringVar(&r.prefix, "prefix", envOr("DROVER_PREFIX", drover.PrefixDefault), "key prefix of the queues (env DROVER_PREFIX)")
	r.timeout = RequestTimeoutDefault
	fs.Var(goDuration{&r.timeout}, "timeout", "give up when Redis does not answer one request within this `duration` (0 = the client's own read timeouts and retries, which a paused Redis stretches to a minute and more)")
}

// answerWithin ends every request of the command's client that Redis
// does not answer within d, and, for a one-shot command (remember), once
// one went unanswered, fails the later ones at once: a paused Redis (a
// frozen host, a partition without resets) holds each request for the
// client's read timeout times its retries, and a command makes several
// requests, so it took a minute and more to fail. A command that serves
// until stopped (dashboard, watch) does not remember: it answered every
// later request with the first one's error, long after Redis was back.
// The client is built with ContextTimeoutEnabled, so the deadline reaches
// the connection.
type answerWithin struct {
	d        time.Duration
	addr     string
	remember bool
	gaveUp   atomic.Pointer[error] // the first unanswered request's error, when remember
}

// errNoAnswer is the cause of a request's context when answerWithin ended it.
var errNoAnswer = errors.New("no answer")

func (h *answerWithin) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *answerWithin) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.within(ctx, func(ctx context.Context) error { return next(ctx, cmd) }, cmd)
	}
}

func (h *answerWithin) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.within(ctx, func(ctx context.Context) error { return next(ctx, cmds) }, cmds...)
	}
}

// within sends a request (one command or a pipeline of cmds) under the
// deadline. The error of a request the deadline ended says so, and is set
// on cmds too: callers read a command's error from it.
func (h *answerWithin) within(ctx context.Context, send func(context.Context) error, cmds ...redis.Cmder) error {
	if gaveUp := h.gaveUp.Load(); gaveUp != nil {
		return setErr(*gaveUp, cmds)
	}
	end := time.Now().Add(h.d)
	ctx, cancel := context.WithTimeoutCause(ctx, h.d, errNoAnswer)
	defer cancel()
	err := send(ctx)
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	var answer redis.Error
	switch {
	case err == nil:
		return nil
	case len(cmds) == 1 && cmds[0].Name() == "ping":
		return err // the connect check: unreachable says it
	case errors.As(err, &answer):
		// Redis answered (an error reply), however late: go-redis reads
		// some of them (a handshake's CLIENT subcommand an older server
		// does not know) and goes on, which it did not once this said
		// "no answer".
		return err
	case connecting(cmds) && h.endedBy(ctx, end, timedOut):
		// A new connection's handshake (HELLO, AUTH, SELECT, ...): nothing
		// was sent that changes data, so say no more than that.
		err = fmt.Errorf("no answer from Redis at %s within %s (--timeout): %w", h.addr, h.d, err)
	case h.endedBy(ctx, end, timedOut):
		err = fmt.Errorf("no answer from Redis at %s within %s (--timeout); a change under way may or may not have happened: %w", h.addr, h.d, err)
	case timedOut && connecting(cmds):
		// The client's own read timeouts and retries ran out first, in
		// a handshake.
		err = fmt.Errorf("no answer from Redis at %s in time: %w", h.addr, err)
	case timedOut:
		// The client's own read timeouts and retries ran out first.
		err = fmt.Errorf("no answer from Redis at %s in time; a change under way may or may not have happened: %w", h.addr, err)
	default:
		return err
	}
	if h.remember {
		h.gaveUp.CompareAndSwap(nil, &err)
	}
	return setErr(err, cmds)
}

// endedBy reports whether the request's deadline (end, --timeout after
// it was sent; ctx is its context) ended it. The connection's read and
// write deadlines are the context's (ContextTimeoutEnabled), so the
// request can fail with an i/o timeout a moment before the context's own
// timer marks it done: on a loaded machine that moment lasts, and the
// error said "in time" (the client's own timeouts) for --timeout's, and
// "a change under way may or may not have happened" for a handshake's.
// An i/o timeout at or after end while ctx is not done (or done by this
// deadline) is this deadline's; an earlier deadline of the caller's is not.
func (h *answerWithin) endedBy(ctx context.Context, end time.Time, timedOut bool) bool {
	cause := context.Cause(ctx)
	if errors.Is(cause, errNoAnswer) {
		return true
	}
	return cause == nil && timedOut && !time.Now().Before(end)
}

// connecting reports whether cmds are a new connection's handshake, which
// go-redis sends through the hooks before a command's first request.
func connecting(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		switch c.Name() {
		case "hello", "auth", "select", "client", "readonly", "ping":
		default:
			return false
		}
	}
	return len(cmds) > 0
}

func setErr(err error, cmds []redis.Cmder) error {
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}

// parseRedisURL reads --redis: a redis://, rediss:// or unix:// URL, or a
// bare host:port (what redis-cli -h/-p and most clients take), which
// means redis://host:port/0. A port no TCP port can be is refused here:
// it was "cannot reach Redis ... invalid port" (exit 1), as if the
// network had failed.
func parseRedisURL(s string) (*redis.Options, error) {
	if !strings.Contains(s, "://") {
		if strings.HasPrefix(s, "/") {
			return nil, fmt.Errorf("want unix://%s for a Unix socket (redis://, rediss:// and unix:// URLs, or host:port)", s)
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, errors.New("want a redis://, rediss:// or unix:// URL, or host:port")
		}
		s = "redis://" + s
	}
	opt, err := redis.ParseURL(s)
	if err != nil {
		return nil, err
	}
	if opt.Network != "unix" {
		if _, port, err := net.SplitHostPort(opt.Addr); err == nil {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("port %q is not a TCP port (1-65535)", port)
			}
		}
	}
	return opt, nil
}

// badRedisURL is the usage error of a --redis value that err refuses,
// its passwords hidden: net/url's errors quote the whole URL.
func badRedisURL(raw string, err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return usagef("--redis %q: %s", redactURL(raw), strings.ReplaceAll(err.Error(), raw, redactURL(raw)))
}

// hidePassword shows the default of the URL flag name (DROVER_REDIS_URL's
// value, when set) without its password in -h: `drover jobs -h` printed
// (default "redis://admin:s3cret@host:6379/0") for anyone to copy into an
// issue or a screenshot.
func hidePassword(fs *flag.FlagSet, name string) {
	if f := fs.Lookup(name); f != nil {
		f.DefValue = redactURL(f.DefValue)
	}
}

// passwordInURL matches the password of a URL's user info, for URLs
// net/url cannot parse (a bad port, say).
var passwordInURL = regexp.MustCompile(`(://[^/@:]*:)[^/@]*@`)

// redactURL is the Redis URL s with its passwords (user info, and the
// password= and sentinel_password= parameters) replaced by "xxxxx", for
// printing: help, usage errors.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return passwordInURL.ReplaceAllString(s, "${1}xxxxx@")
	}
	out := u.Redacted()
	q := u.Query()
	changed := false
	for _, k := range []string{"password", "sentinel_password"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
			changed = true
		}
	}
	if changed {
		u2, _ := url.Parse(out)
		u2.RawQuery = q.Encode()
		out = u2.String()
	}
	return out
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// inspector connects to Redis and returns an Inspector and a func that
// closes the connection.
func (r *redisFlags) inspector(ctx context.Context) (*inspect.Inspector, func(), error) {
	if r.timeout < 0 {
		return nil, nil, usagef("--timeout must not be negative, got %s", r.timeout)
	}
	rdb, where, err := r.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: r.prefix, Logger: r.logger})
	if err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	if err := ins.Ping(ctx); err != nil {
		_ = rdb.Close()
		if where.plain != "" && hungUp(err) && speaksTLS(ctx, where.plain) {
			return nil, nil, fmt.Errorf("the server at %s speaks TLS and hung up on plain Redis: use rediss:// in --redis or DROVER_REDIS_URL", where.plain)
		}
		return nil, nil, unreachable(where, err)
	}
	r.ins = ins
	_, r.cluster = rdb.(*redis.ClusterClient)
	return ins, func() {
		_ = ins.Close(context.WithoutCancel(ctx))
		_ = rdb.Close()
	}, nil
}

// connect opens the client --redis names, and says where it looks (for
// unreachable). A URL with a master_name parameter names a Sentinel set-up,
// in go-redis's failover URL form: sentinels in the host and in addr=
// parameters, the master's database in the path. Any other URL names one
// server, which is asked whether it is a Redis Cluster node; a cluster
// node's address opens a cluster client seeded with it, so any node of a
// cluster will do, as with redis-cli -c. A server that does not answer the
// question (down, or INFO refused) is taken for a single server, and the
// commands report what it says.
func (r *redisFlags) connect(ctx context.Context) (redis.UniversalClient, place, error) {
	if isFailoverURL(r.url) {
		fo, err := redis.ParseFailoverURL(r.url)
		if err != nil {
			return nil, place{}, badRedisURL(r.url, err)
		}
		where := place{addr: fmt.Sprintf("master %q of the sentinels at %s", fo.MasterName, strings.Join(fo.SentinelAddrs, ", ")), db: fo.DB, sentinel: true}
		if err := r.askSentinels(ctx, fo); err != nil {
			return nil, place{}, err
		}
		fo.ContextTimeoutEnabled = true
		rdb := redis.NewFailoverClient(fo)
		r.answerWithin(rdb, fo.MasterName)
		return rdb, where, nil
	}
	opt, err := parseRedisURL(r.url)
	if err != nil {
		return nil, place{}, badRedisURL(r.url, err)
	}
	if opt.TLSConfig != nil {
		if err := notPlainRedis(ctx, opt.Addr); err != nil {
			return nil, place{}, err
		}
	}
	if err := refusedDial(ctx, opt); err != nil {
		return nil, place{}, unreachable(place{addr: opt.Addr, db: opt.DB}, err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	r.answerWithin(rdb, opt.Addr)
	if !clusterNode(ctx, rdb) {
		where := place{addr: opt.Addr, db: opt.DB}
		if opt.TLSConfig == nil && opt.Network != "unix" {
			where.plain = opt.Addr
		}
		return rdb, where, nil
	}
	_ = rdb.Close()
	if opt.DB != 0 {
		return nil, place{}, usagef("--redis %q: %s is a Redis Cluster node, and a cluster has only database 0", redactURL(r.url), opt.Addr)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{opt.Addr}, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
		DialTimeout: opt.DialTimeout, ReadTimeout: opt.ReadTimeout, WriteTimeout: opt.WriteTimeout,
		ContextTimeoutEnabled: true,
	})
	r.answerWithin(cc, opt.Addr)
	return cc, place{addr: "the Redis Cluster of " + opt.Addr}, nil
}

// askSentinels asks each sentinel of fo in turn, once and without the
// client's retries, where the master is, and returns nil at the first
// answer. The failover client says neither why it found no master nor
// soon: with no sentinel listening it redialled until --timeout ran out
// and said "context deadline exceeded" (35 s with --timeout 0), and
// sentinels that know no master of that name were "all sentinels
// specified in configuration are unreachable: redis: nil".
func (r *redisFlags) askSentinels(ctx context.Context, fo *redis.FailoverOptions) error {
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	var unknown, failed []string
	var lastErr error
	for _, addr := range fo.SentinelAddrs {
		sc := redis.NewSentinelClient(&redis.Options{
			Addr: addr, Username: fo.SentinelUsername, Password: fo.SentinelPassword, TLSConfig: fo.TLSConfig,
			MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
		})
		_, err := sc.GetMasterAddrByName(ctx, fo.MasterName).Result()
		_ = sc.Close()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, redis.Nil):
			unknown = append(unknown, addr)
		default:
			failed = append(failed, fmt.Sprintf("%s: %v", addr, err))
			lastErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(unknown) > 0 && len(failed) == 0 {
		return fmt.Errorf("no master named %q: the sentinels at %s monitor none of that name (master_name= in --redis or DROVER_REDIS_URL)", fo.MasterName, strings.Join(unknown, ", "))
	}
	msg := fmt.Sprintf("cannot reach a sentinel for master %q (set them in --redis or DROVER_REDIS_URL: redis://sentinel:26379/db?master_name=NAME&addr=sentinel2:26379): %s", fo.MasterName, strings.Join(failed, "; "))
	if len(unknown) > 0 {
		msg += fmt.Sprintf("; and the sentinels at %s monitor no master of that name", strings.Join(unknown, ", "))
	}
	if loginRefused(lastErr) {
		msg = fmt.Sprintf("login refused by the sentinels for master %q (a Sentinel URL's user:password@ is the sentinels' login): %s", fo.MasterName, strings.Join(failed, "; "))
	}
	return errors.New(msg)
}

// isFailoverURL is true for a --redis URL naming a Sentinel master.
func isFailoverURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Query().Has("master_name")
}

// clusterNode asks the server whether it runs in cluster mode (INFO
// cluster). A user that may not run INFO (a managed Redis's ACL without
// @dangerous) asks CLUSTER INFO instead, which such ACLs allow and a server
// without cluster mode refuses ("cluster support disabled").
func clusterNode(ctx context.Context, rdb *redis.Client) bool {
	info, err := rdb.Do(ctx, "INFO", "cluster").Text()
	if err == nil {
		return strings.Contains(info, "cluster_enabled:1")
	}
	var refused redis.Error
	if !errors.As(err, &refused) {
		return false
	}
	state, err := rdb.ClusterInfo(ctx).Result()
	return err == nil && strings.Contains(state, "cluster_state:")
}

// refusedDial dials the server once and returns an error only when the
// dial is refused outright: nothing listens on the port, no socket file, no
// such host. The client's own retries (five dials per command, each command
// sent four times, for the cluster question and then the ping) took 3.6 s
// to say "connection refused". Anything else (a slow or lossy network, a
// server that answers late) is left to the client and its timeouts.
func refusedDial(ctx context.Context, opt *redis.Options) error {
	// A host that drops the dial (a firewall) is the client's to wait for:
	// this look adds at most a second to that wait.
	timeout := time.Second
	if opt.DialTimeout > 0 && opt.DialTimeout < timeout {
		timeout = opt.DialTimeout
	}
	network := opt.Network
	if network == "" {
		network = "tcp"
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, network, opt.Addr)
	if err == nil {
		_ = c.Close()
		return nil
	}
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) && network == "unix":
		return fmt.Errorf("no server on the socket %s (connection refused)", opt.Addr)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing listens on %s (connection refused)", opt.Addr)
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("no socket file %s", opt.Addr)
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fmt.Errorf("no host named %q", dnsErr.Name)
	}
	return nil
}

// answerWithin adds the --timeout hook (see answerWithin) to rdb.
func (r *redisFlags) answerWithin(rdb redis.UniversalClient, addr string) {
	if r.timeout > 0 {
		rdb.AddHook(&answerWithin{d: r.timeout, addr: addr, remember: !r.serving})
	}
}

// queue connects like inspector and returns the handle of the queue named
// name, there or not (add and scheduler upsert create it), and a func that
// closes the connection.
func (r *redisFlags) queue(ctx context.Context, name string) (*drover.Queue, func(), error) {
	// A name no queue can have is a typo in the command line (exit 2),
	// said before Redis is opened; it was exit 1 after connecting.
	if err := keys.ValidateName(name); err != nil {
		return nil, nil, usagef("%v", err)
	}
	ins, closeRedis, err := r.inspector(ctx)
	if err != nil {
		return nil, nil, err
	}
	if _, tagged := keys.HashTag(r.prefix + ":" + name + ":"); r.cluster && !tagged {
		// The library's refusal names its Go option (Prefix: "{bull}"),
		// and it was exit 1, as if Redis had refused.
		closeRedis()
		return nil, nil, usagef("queue %q with --prefix %q on a Redis Cluster: its keys would spread over many hash slots "+
			"and its scripts would fail with CROSSSLOT; put a hash tag in the prefix (--prefix '{%s}') or in the queue name ('{%s}')",
			name, r.prefix, r.prefix, name)
	}
	q, err := ins.Queue(name)
	if err != nil {
		closeRedis()
		return nil, nil, err
	}
	return q, closeRedis, nil
}

// existingQueue is queue for commands that read or change a queue that is
// there: an unknown name is an error naming the known queues.
func (r *redisFlags) existingQueue(ctx context.Context, name string) (*drover.Queue, func(), error) {
	q, closeRedis, err := r.queue(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if _, err := r.ins.QueueInfo(ctx, name); err != nil {
		closeRedis()
		return nil, nil, err
	}
	return q, closeRedis, nil
}

// notPlainRedis checks, before a rediss:// URL is used, that the server at
// addr does not speak plain Redis: a plain server never answers a TLS
// handshake (it waits for a line), so the client would retry until its
// timeouts run out (25s) and report "context deadline exceeded". A plain
// PING on a separate connection tells at once: plain Redis answers with a
// RESP reply, a TLS server with an alert or by hanging up.
func notPlainRedis(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil //nolint:nilerr // the client reports unreachable servers itself
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return nil //nolint:nilerr // not plain Redis, or gone: the client finds out
	}
	b := make([]byte, 1)
	if n, _ := c.Read(b); n == 1 && (b[0] == '+' || b[0] == '-') {
		return fmt.Errorf("the URL says rediss:// (TLS) but the server at %s speaks plain Redis without TLS; use redis://", addr)
	}
	return nil
}

// queueFlags is how every queue command starts: a flag set named after the
// command that prints to out, the Redis flags, and -h printing usage (a
// paragraph or two, ending without a newline) before the flags.
type queueFlags struct {
	*flag.FlagSet
	redis redisFlags
}

func newQueueFlags(name string, out io.Writer, usage string) *queueFlags {
	f := &queueFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.SetOutput(out)
	f.redis.register(f.FlagSet)
	f.Usage = func() {
		fmt.Fprintln(out, usage)
		f.PrintDefaults()
	}
	return f
}

// duration is a flag like FlagSet.Duration that also takes a bare number
// of milliseconds, the unit of BullMQ's options (--every 1000 = 1s).
func (f *queueFlags) duration(name string, value time.Duration, usage string) *time.Duration {
	d := &msDuration{d: value}
	f.Var(d, name, usage+" (a Go `duration` such as 30s, or milliseconds)")
	return &d.d
}

// msDuration is the flag.Value of queueFlags.duration.
type msDuration struct{ d time.Duration }

func (m *msDuration) String() string { return m.d.String() }

func (m *msDuration) Set(s string) error {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
			return fmt.Errorf("%d ms is out of range", ms)
		}
		m.d = time.Duration(ms) * time.Millisecond
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 30s or 1m30s, or a number of milliseconds")
	}
	m.d = d
	return nil
}

// jsonFlag is the --json flag of commands that print JSON on request.
func (f *queueFlags) jsonFlag() *bool { return f.Bool("json", false, "print JSON") }

// parse parses args as parseArgs does and returns the positional ones.
func (f *queueFlags) parse(args []string) ([]string, error) { return parseArgs(f.FlagSet, args) }

// parseArgs parses flags anywhere among the arguments (`drover jobs mail
// --state failed` as well as `drover jobs --state failed mail`) and returns
// the positional ones. Everything after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseFlags is fs.Parse without its printing on a bad flag: the flag
// package writes the error and the whole usage to the flag set's output,
// stdout, so `drover jobs q --json --limit x > jobs.json` wrote the usage
// into jobs.json, and the error came twice (there and on stderr). The
// command's error alone reports it now, on stderr; -h still prints the
// usage on stdout.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
	}
	if err != nil && strings.HasSuffix(err.Error(), ": parse error") {
		// The package's int, uint and bool flags say "parse error".
		if m := badValueRe.FindStringSubmatch(err.Error()); m != nil {
			if f := fs.Lookup(m[2]); f != nil {
				if want, ok := wantOf[fmt.Sprintf("%T", f.Value)]; ok {
					return fmt.Errorf("invalid value %s for flag -%s: want %s", m[1], m[2], want)
				}
			}
		}
	}
	return err
}

// badValueRe matches the flag package's refusal of a flag's value.
var badValueRe = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-([^:]+): parse error$`)

// wantOf says what the flag package's value types take.
var wantOf = map[string]string{
	"*flag.intValue":   "a whole number",
	"*flag.int64Value": "a whole number",
	"*flag.uintValue":  "a whole number of at least 0",
	"*flag.boolValue":  "true or false (or the flag alone)",
}

// goDuration is a flag.Value like the flag package's duration whose
// refusal says what it wants: the package's says only "parse error"
// (`--timeout 5` read: invalid value "5" for flag -timeout: parse error).
type goDuration struct{ d *time.Duration }

// durationFlag defines a duration flag on fs, as fs.Duration does.
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := value
	fs.Var(goDuration{&d}, name, usage+" (a Go `duration` such as 30s or 1m30s)")
	return &d
}

func (g goDuration) String() string {
	if g.d == nil {
		return "0s" // the zero value's, so PrintDefaults omits a zero default
	}
	return g.d.String()
}

func (g goDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("want a duration with its unit, such as %ss or %sms", s, s)
		}
		return errors.New("want a duration such as 30s, 1m30s or 500ms")
	}
	*g.d = d
	return nil
}

// unreachable is the one-line error of every command whose Redis does not
// answer: where it looked, and how to point it elsewhere.
func unreachable(where place, err error) error {
	if loginRefused(err) && where.sentinel {
		// go-redis's Sentinel URL gives user:password@ to the sentinels;
		// the master's login is in the username= and password= parameters.
		return fmt.Errorf("login refused by Redis at %s (db %d) (in a Sentinel URL the master's login goes in the username= and password= parameters: redis://sentinel:26379/db?master_name=NAME&password=PASSWORD; user:password@ is the sentinels' own): %w", where.addr, where.db, err)
	}
	if loginRefused(err) {
		// Redis answered: the network is fine, the credentials are not.
		return fmt.Errorf("login refused by Redis at %s (db %d) (set the user and password in --redis or DROVER_REDIS_URL: redis://user:password@host:port/db): %w", where.addr, where.db, err)
	}
	if untrustedCert(err) {
		// Redis answered the handshake: the network is fine, the
		// certificate is not trusted here.
		return fmt.Errorf("the TLS certificate of Redis at %s is not trusted on this machine (trust its CA with SSL_CERT_FILE=/path/ca.pem, or add ?skip_verify=true to the rediss:// URL to skip the check): %w", where.addr, err)
	}
	if noSuchDB(err) {
		// Redis answered too: the server has fewer databases.
		return fmt.Errorf("database %d does not exist on Redis at %s (its `databases` setting is lower; pick another /db in --redis or DROVER_REDIS_URL): %w", where.db, where.addr, err)
	}
	return fmt.Errorf("cannot reach Redis at %s (db %d; set it with --redis or DROVER_REDIS_URL): %w", where.addr, where.db, err)
}

// noSuchDB reports whether err is Redis refusing SELECT of a database
// number past its `databases` setting.
func noSuchDB(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.Contains(rerr.Error(), "DB index is out of range")
}

// place is where a client looks for Redis, for unreachable.
type place struct {
	addr string // a server, or a description of a cluster or Sentinel set-up
	db   int
	// sentinel is set for a Sentinel set-up, whose URL holds the master's
	// login elsewhere than a server's.
	sentinel bool
	// plain is the address of a single server named by a redis:// URL or
	// host:port (no TLS), for the check that it wants TLS.
	plain string
}

// hungUp reports whether err is the server closing the connection without
// a reply (EOF, reset): what a TLS-only port does with plain Redis.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// speaksTLS reports whether the server at addr completes a TLS handshake
// (its certificate unchecked: this only tells TLS from not-TLS).
func speaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // only asks whether the port speaks TLS; nothing is sent
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// untrustedCert reports whether err is a TLS certificate the client does
// not trust (unknown authority, another host's name, expired).
func untrustedCert(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// loginRefused reports whether err is Redis refusing the connection's
// credentials (a wrong password, or none where one is required).
func loginRefused(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "NOAUTH")
}
