package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A client that sends a mutating request again (its connection dropped
// before the answer, a proxy or a script retried) must not have the action
// done twice: a clean or a bounded promotion done twice removes or runs
// twice the jobs confirmed. A request that carries an Idempotency-Key
// header claims the key (per user, method and path) before it acts; the
// same request again within IdempotencyTTL gets the first one's answer
// (header Idempotency-Replayed: true), or 409 while the first still runs.
// A refused request (an error answer) releases its key: nothing happened,
// so sending it again may act. An action whose outcome is unknown keeps its
// key: sending it again says so instead of acting a second time.

// IdempotencyTTL is how long the answer to a request with an
// Idempotency-Key is kept for a resend.
const IdempotencyTTL = 10 * time.Minute

// idempotencyKeyMax bounds an Idempotency-Key header.
const idempotencyKeyMax = 200

// Stored states of a claimed key other than a kept answer. A claim still
// under way stores idemPending followed by ":" and the claiming request's
// own random token, so that request knows its claim again when go-redis
// resends the SET NX after a lost reply (the resend finds the key set);
// dashboards before this stored idemPending alone.
const (
	idemPending = "pending"
	idemUnknown = "unknown"
)

// keptAnswer is a request's answer kept for a resend.
type keptAnswer struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// idemClaim is a request's claim of its Idempotency-Key.
type idemClaim struct {
	key string // the Redis key
	// kept is the first request's answer when this one is a resend; busy
	// says the first one still runs; unknown that its outcome is unknown.
	kept    *keptAnswer
	busy    bool
	unknown bool
}

// claimIdempotency claims the key of r sent by user: a claim with neither
// kept, busy nor unknown set is the first request's, which acts.
func (s *store) claimIdempotency(ctx context.Context, user string, r *http.Request, key string) (*idemClaim, error) {
	c := &idemClaim{key: s.k.Idempotency(hashID(user + "\x00" + r.Method + "\x00" + r.URL.Path + "\x00" + key))}
	mine := idemPending + ":" + randomToken()
	var v string
	for range 2 { // the kept answer may expire between the two reads
		ok, err := s.rdb.SetNX(ctx, c.key, mine, IdempotencyTTL).Result()
		if err != nil {
			return nil, fmt.Errorf("claim the Idempotency-Key: %w", err)
		}
		if ok {
			return c, nil
		}
		if v, err = s.rdb.Get(ctx, c.key).Result(); !errors.Is(err, redis.Nil) {
			if err != nil {
				return nil, fmt.Errorf("read the Idempotency-Key: %w", err)
			}
			break
		}
	}
	switch {
	case v == mine:
		// This request's own claim: the SET NX was sent again after its
		// reply was lost, and the resend found the first send's key.
		return c, nil
	case v == "":
		return nil, errors.New("the Idempotency-Key could not be claimed: it expired twice while read")
	case v == idemPending || strings.HasPrefix(v, idemPending+":"):
		c.busy = true
	case v == idemUnknown:
		c.unknown = true
	default:
		var a keptAnswer
		if json.Unmarshal([]byte(v), &a) != nil {
			return nil, errors.New("the answer kept for this Idempotency-Key is not JSON")
		}
		c.kept = &a
	}
	return c, nil
}

// settle records how the claiming request ended: its answer (status <
// 300), unknown, or nothing (an error: the key is released).
func (s *store) settle(ctx context.Context, c *idemClaim, status int, body []byte, unknown bool) error {
	var err error
	switch {
	case unknown:
		err = s.rdb.Set(ctx, c.key, idemUnknown, IdempotencyTTL).Err()
	case status >= 200 && status < 300:
		b, _ := json.Marshal(keptAnswer{Status: status, Body: json.RawMessage(body)}) // a JSON answer: cannot fail
		err = s.rdb.Set(ctx, c.key, b, IdempotencyTTL).Err()
	default:
		err = s.rdb.Del(ctx, c.key).Err()
	}
	if err != nil {
		return fmt.Errorf("record the answer of the Idempotency-Key: %w", err)
	}
	return nil
}
