package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CommandCalls reads INFO commandstats: how many times the server ran each
// command since the last CONFIG RESETSTAT, the commands scripts call
// included. Names are lower case, subcommands as "config|resetstat".
func CommandCalls(tb testing.TB, rdb redis.UniversalClient) map[string]int {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("redistest: INFO commandstats: %v", err)
	}
	calls := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		n, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, err := strconv.Atoi(n)
		if err != nil {
			tb.Fatalf("redistest: INFO commandstats line %q: %v", line, err)
		}
		calls[strings.TrimPrefix(name, "cmdstat_")] = c
	}
	return calls
}

// clientCommands are what a client sends around script calls and counts:
// ScriptCommands leaves them out.
var clientCommands = map[string]bool{
	"evalsha": true, "eval": true, "info": true, "config|resetstat": true, "config": true,
	"hello": true, "client|setinfo": true, "client": true, "ping": true,
}

// ScriptCommands sums CommandCalls without the client's own commands
// (EVALSHA, INFO, CONFIG, the connection handshake): the Redis commands the
// scripts ran, to count the cost of a script call.
func ScriptCommands(tb testing.TB, rdb redis.UniversalClient) int {
	tb.Helper()
	total := 0
	for name, c := range CommandCalls(tb, rdb) {
		if !clientCommands[name] {
			total += c
		}
	}
	return total
}
