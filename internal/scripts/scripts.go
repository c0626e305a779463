// Package scripts holds drover's Lua scripts, one per state transition, and a
// typed Go wrapper for each. Every multi-key change of queue state happens in
// exactly one script call, so it is atomic with respect to other drover and
// Node BullMQ clients on the same Redis.
//
// Scripts live in lua/*.lua with a header that is their contract. A line
// "--@include name" is replaced by lua/include/name.lua when the package is
// initialised (indented like the line, so an include can go inside a
// function), so shared helpers are written once; a line "--@record name"
// by the offsets of a record schema (records). Every script receives the
// queue's keys as KEYS (all 16 on a Redis Cluster, the wait list alone
// elsewhere: keys.Queue.ScriptArgs and Standalone) and the key base as
// ARGV[1]; keys not declared, the keys of individual jobs among them, are
// built from that base inside the script, which is cluster-safe because the
// base carries the queue's hash tag.
//
// Scripts run with EVALSHA and fall back to EVAL on NOSCRIPT (go-redis
// Script.Run). The wrappers turn negative Lua return codes into the errors
// below; no raw code escapes this package.
package scripts

import (
	"context"
	"embed"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/keys"
)

//go:embed lua/*.lua lua/include/*.lua
var luaFS embed.FS

// Source returns the expanded source of script name (without ".lua"), as it
// is sent to Redis: the top-level functions it never calls (prune), the
// queue keys it never names (pruneKeys), comment lines, blank lines and
// indentation left out, and record offsets written as numbers
// (inlineRecord). An include ("include/name") comes whole, for tests that
// run its helpers.
func Source(name string) string {
	src, err := expand(name, map[string]bool{})
	if err != nil {
		panic(err) // the embedded files are fixed at build time; a test covers every script
	}
	if !strings.HasPrefix(name, "include/") {
		src = inlineRecord(pruneKeys(prune(src)))
	}
	return compact(src)
}

// compact drops what only a reader needs. Redis hashes (SHA1) and compiles
// the whole text on each first EVAL of a script on a server, and the text
// crosses the network each time; the comments are a third of it. Lines are
// kept whole otherwise (a "--" after code stays), and no script has a
// multi-line string or comment for this to cut into.
func compact(src string) string {
	var out strings.Builder
	out.Grow(len(src))
	for _, line := range strings.SplitAfter(src, "\n") {
		t := strings.TrimLeft(line, " \t")
		if strings.TrimSpace(t) == "" || strings.HasPrefix(t, "--") {
			continue
		}
		out.WriteString(t)
	}
	return out.String()
}

func expand(name string, seen map[string]bool) (string, error) {
	file := path.Join("lua", name+".lua")
	if strings.HasPrefix(name, "include/") {
		file = path.Join("lua", name+".lua")
	}
	b, err := luaFS.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read script %s: %w", name, err)
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if rec, ok := strings.CutPrefix(trimmed, "--@record "); ok {
			lua, err := recordLua(strings.TrimSpace(rec))
			if err != nil {
				return "", fmt.Errorf("script %s: %w", name, err)
			}
			out.WriteString(lua)
			continue
		}
		if inc, ok := strings.CutPrefix(trimmed, "--@include "); ok {
			inc = "include/" + strings.TrimSpace(inc)
			if seen[inc] {
				continue
			}
			seen[inc] = true
			sub, err := expand(inc, seen)
			if err != nil {
				return "", err
			}
			// An include inside a function (an indented line) is indented
			// like it, so its functions are that function's locals, not
			// top-level ones (see prune).
			if indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]; indent != "" {
				sub = indentLines(sub, indent)
			}
			out.WriteString(sub)
			out.WriteString("\n")
			continue
		}
		out.WriteString(line)
	}
	return out.String(), nil
}

func indentLines(src, indent string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(src, "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString(indent)
		}
		b.WriteString(line)
	}
	return b.String()
}

// records are the schemas of the per-item records scripts read from ARGV,
// by the name a "--@record name" line uses. The line becomes the Lua table
// REC of each field's offset in a record (1-based) and REC_FIELDS, so the
// Go list is the only place the order is written.
var records = map[string][]string{
	"finish": finishRecordNames(),
	"flow":   flowRecordNames(),
}

func recordLua(name string) (string, error) {
	fields, ok := records[name]
	if !ok {
		return "", fmt.Errorf("unknown record %q", name)
	}
	var b strings.Builder
	b.WriteString("local REC = {")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = %d", f, i+1)
	}
	fmt.Fprintf(&b, "}\nlocal REC_FIELDS = %d\n", len(fields))
	if name == "finish" {
		fmt.Fprintf(&b, "local REC_HEAD = %d\n", finishHead)
	}
	return b.String(), nil
}

// Names lists every script (not the includes).
func Names() []string {
	entries, err := luaFS.ReadDir("lua")
	if err != nil {
		panic(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, strings.TrimSuffix(e.Name(), ".lua"))
		}
	}
	return names
}

// script is one Lua script, expanded (Source) on its first use. Expanding
// and pruning all of them when the package was initialised cost every
// program that imports drover about 430 million instructions (30-40 ms of
// CPU) before its main ran, the CLI's commands included, which each use a
// few scripts.
type script struct {
	name string
	once sync.Once
	rs   *redis.Script
	src  string
	// hash is the script's SHA1 as an EVALSHA argument, boxed once: a call
	// boxing it anew allocated on every script call.
	hash any
}

func load(name string) *script { return &script{name: name} }

// ready expands the script on its first use and returns it.
func (s *script) ready() *script {
	s.once.Do(func() {
		s.src = Source(s.name)
		s.rs = redis.NewScript(s.src)
		s.hash = s.rs.Hash()
	})
	return s
}

// Load puts the script in the server's script cache (SCRIPT LOAD).
func (s *script) Load(ctx context.Context, rdb redis.Scripter) *redis.StringCmd {
	return s.ready().rs.Load(ctx, rdb)
}

// Doer runs a command: a client or a pipeline.
type Doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// run calls the script for queue k with ARGV = base, args...: EVALSHA, then
// EVAL when the server does not have the script cached. The queue's keys and
// base come pre-boxed (keys.Queue.ScriptArgs), which saves an allocation per
// key on every call.
func (s *script) run(ctx context.Context, rdb Doer, k keys.Queue, args ...any) *redis.Cmd {
	return s.doArgs(ctx, rdb, append(s.cmdArgs(k, len(args)), args...))
}

// cmdArgs returns the start of a call's command for queue k (EVALSHA, the
// hash, the queue's keys and base) with room for n script arguments after
// it, for a caller that appends them itself and sends it with sendOnce: the
// hot finish path thus builds one slice a call instead of its arguments and
// then a copy with this prefix (about 400 bytes a job at concurrency 1).
func (s *script) cmdArgs(k keys.Queue, n int) []any {
	prefix := k.ScriptArgs()
	cmdArgs := make([]any, 0, 2+len(prefix)+n)
	cmdArgs = append(cmdArgs, "evalsha", s.ready().hash)
	return append(cmdArgs, prefix...)
}

// doArgs sends cmdArgs (made by cmdArgs) with Do, then as EVAL after a
// NOSCRIPT answer.
func (s *script) doArgs(ctx context.Context, rdb Doer, cmdArgs []any) *redis.Cmd {
	cmd := rdb.Do(ctx, cmdArgs...)
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		cmdArgs[0], cmdArgs[1] = "eval", s.ready().src
		cmd = rdb.Do(ctx, cmdArgs...)
	}
	explainRefusal(cmd)
	return cmd
}

// scriptsRefusedError is the error of a script call that the Redis user
// may not make at all: an ACL without EVALSHA (a "read-only" user granted
// +@read alone, as managed Redis services suggest). drover, like BullMQ,
// runs every queue operation as a Lua script, reads included, so the bare
// NOPERM reply left the operator guessing which grant is missing.
type scriptsRefusedError struct{ Err error }

func (e *scriptsRefusedError) Error() string {
	return e.Err.Error() + " (drover runs every queue operation, reads included, as a Lua script, as BullMQ does: " +
		"grant this Redis user +@scripting, or +evalsha +eval; with -@write it stays read-only, its scripts cannot write either)"
}

func (e *scriptsRefusedError) Unwrap() error { return e.Err }

// explainRefusal turns cmd's NOPERM reply to EVALSHA or EVAL into a
// scriptsRefusedError. Other refusals (a key pattern the user may not
// touch) are left as Redis said them.
func explainRefusal(cmd *redis.Cmd) {
	err := cmd.Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		return
	}
	if msg := err.Error(); strings.Contains(msg, "'evalsha'") || strings.Contains(msg, "'eval'") {
		cmd.SetErr(&scriptsRefusedError{Err: err})
	}
}

// Processor runs a command object: a client or a pipeline.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// sentOnce is a command go-redis sends at most once: its own retries after
// a lost reply are off, so each error the caller sees is that of the one
// send. The add scripts use it: go-redis resending a call whose reply was
// lost, then failing to reconnect (the server crashed right after running
// it), returned the dial error, and drover took that for "never sent" while
// the jobs were stored. Their caller resends with the same call token
// itself and so knows of every send (see drover's sendAdd).
type sentOnce struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command again.
func (sentOnce) NoRetry() bool { return true }

// runOnce is run with the command sent at most once per call (sentOnce);
// the EVAL after a NOSCRIPT answer is a second call (NOSCRIPT means the
// first did not run). A Doer that runs no command objects gets run.
func (s *script) runOnce(ctx context.Context, rdb Doer, k keys.Queue, args ...any) *redis.Cmd {
	return s.sendOnce(ctx, rdb, append(s.cmdArgs(k, len(args)), args...))
}

// sendOnce is runOnce for a command built with cmdArgs.
func (s *script) sendOnce(ctx context.Context, rdb Doer, cmdArgs []any) *redis.Cmd {
	p, ok := rdb.(Processor)
	if !ok {
		return s.doArgs(ctx, rdb, cmdArgs)
	}
	cmd := redis.NewCmd(ctx, cmdArgs...)
	_ = p.Process(ctx, sentOnce{cmd})
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		cmdArgs[0], cmdArgs[1] = "eval", s.ready().src
		cmd = redis.NewCmd(ctx, cmdArgs...)
		_ = p.Process(ctx, sentOnce{cmd})
	}
	explainRefusal(cmd)
	return cmd
}

var (
	addJobs               = load("addJobs")
	addPlainJobs          = load("addPlainJobs")
	moveToActive          = load("moveToActive")
	finishJobs            = load("finishJobs")
	extendLocks           = load("extendLocks")
	moveStalledJobsToWait = load("moveStalledJobsToWait")
	pause                 = load("pause")
	getState              = load("getState")
	getCounts             = load("getCounts")
	getRanges             = load("getRanges")
	updateProgress        = load("updateProgress")
	updateData            = load("updateData")
	addLog                = load("addLog")
	removeJob             = load("removeJob")
	promote               = load("promote")
	changeDelay           = load("changeDelay")
	changePriority        = load("changePriority")
	reprocessJob          = load("reprocessJob")
	moveJobsToWait        = load("moveJobsToWait")
	drain                 = load("drain")
	obliterate            = load("obliterate")
	cleanJobsInSet        = load("cleanJobsInSet")
	settleCall            = load("settleCall")
	getRateLimitTtl       = load("getRateLimitTtl")
)

// All is every loaded script, for preloading (SCRIPT LOAD) before pipelines.
func All() []*script {
	return append([]*script{
		addJobs, addPlainJobs, moveToActive, finishJobs, extendLocks, moveStalledJobsToWait, pause, getState,
		getCounts, getRanges, updateProgress, updateData, addLog, removeJob, promote, changeDelay,
		changePriority, reprocessJob, moveJobsToWait, drain, obliterate, cleanJobsInSet, settleCall,
		getRateLimitTtl,
	}, featureScripts()...)
}
