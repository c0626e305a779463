package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
)

// Cursor marks where a page of Jobs ended (JobPage.NextCursor) or began
// (JobPage.PrevCursor): the job at that edge, the position it had, and in
// a sorted-set state its score. Turning a page from a cursor finds that
// job again wherever it is now, so jobs that entered or left the state
// before it shift no job out of view and show none twice. Treat it as
// opaque; ParseCursor checks one that came back from a client.
type Cursor string

// cursorOf builds the cursor of the job id at pos (score "" in a list).
func cursorOf(pos int, score, id string) Cursor {
	return Cursor(strconv.Itoa(pos) + ":" + score + ":" + id)
}

// ParseCursor checks a cursor that a client sent back. The error names
// what is wrong; wrap it in drover.ErrInvalidOption terms for the caller.
func ParseCursor(s string) (Cursor, error) {
	c := Cursor(s)
	if _, _, _, err := c.parts(); err != nil {
		return "", err
	}
	return c, nil
}

func (c Cursor) parts() (pos int, score string, id string, err error) {
	p, rest, ok1 := strings.Cut(string(c), ":")
	score, id, ok2 := strings.Cut(rest, ":")
	pos, perr := strconv.Atoi(p)
	if !ok1 || !ok2 || perr != nil || pos < 0 || id == "" {
		return 0, "", "", fmt.Errorf("%w: cursor %q is not one a page of jobs gave (position:score:job id)", drover.ErrInvalidOption, string(c))
	}
	if score != "" {
		if _, err := strconv.ParseFloat(score, 64); err != nil {
			return 0, "", "", fmt.Errorf("%w: cursor %q has a score that is not a number", drover.ErrInvalidOption, string(c))
		}
	}
	return pos, score, id, nil
}

// Moved says that a page turned from a cursor did not find its edge job
// where the previous page had it: jobs entered or left the state (or the
// job itself moved) between the two pages. The page is still the one right
// after (or before) that job; Moved is there to tell the operator.
type Moved struct {
	// ID is the job the cursor named.
	ID string `json:"id"`
	// From is its position when the previous page was listed.
	From int `json:"from"`
	// To is its position now, or where it would be when Gone.
	To int `json:"to"`
	// Gone: the job left the state (or, in a sorted set, came back with
	// another score). In a sorted set the page starts where its score and
	// id put it (jobs of one score are ordered by id, as Redis orders
	// them); in a list, at its old position, and a job may then be
	// skipped or shown twice: the page says so.
	Gone bool `json:"gone"`
}

// stateKey is the key that holds a state's job ids and whether it is a
// list (else a sorted set), as getRanges reads them.
func stateKey(k keys.Queue, s drover.JobState) (string, bool, error) {
	switch s {
	case drover.StateWaiting:
		return k.Wait(), true, nil
	case drover.StatePaused:
		return k.Paused(), true, nil
	case drover.StateActive:
		return k.Active(), true, nil
	case drover.StateDelayed:
		return k.Delayed(), false, nil
	case drover.StatePrioritized:
		return k.Prioritized(), false, nil
	case drover.StateCompleted:
		return k.Completed(), false, nil
	case drover.StateFailed:
		return k.Failed(), false, nil
	case drover.StateWaitingChildren:
		return k.WaitingChildren(), false, nil
	}
	return "", false, fmt.Errorf("%w: cannot page through state %q", drover.ErrInvalidOption, s)
}

// anchor is where a cursor's job stands now in the listed order.
type anchor struct {
	// pos is its position now; when gone, the position of the first job
	// that comes after it.
	pos   int
	gone  bool
	total int // jobs in the state, read with pos
}

// listSearchSlack bounds how far past its old position LPOS looks for a
// cursor's job in a list: far enough for the jobs added while an operator
// reads a page, and a deep page still costs what its LRANGE costs.
const listSearchSlack = 10000

// locate finds the cursor's job in the state's key, in the order asc says:
// Z(REV)RANK in a sorted set (its score must match, else it moved: the
// score says where it would be), a bounded LPOS in a list.
func (i *Inspector) locate(ctx context.Context, queue string, state drover.JobState, asc bool, c Cursor) (anchor, error) {
	oldPos, score, id, err := c.parts()
	if err != nil {
		return anchor{}, err
	}
	key, isList, err := stateKey(i.keys(queue), state)
	if err != nil {
		return anchor{}, err
	}
	var a anchor
	if isList {
		var lpos *redis.IntCmd
		var llen *redis.IntCmd
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			rank := int64(1) // newest first reads the list from its head
			if asc {
				rank = -1 // oldest first reads it from its tail
			}
			lpos = p.LPos(ctx, key, id, redis.LPosArgs{Rank: rank, MaxLen: int64(oldPos + listSearchSlack)})
			llen = p.LLen(ctx, key)
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return a, fmt.Errorf("find job %q in %s of queue %q: %w", id, state, queue, err)
		}
		a.total = int(llen.Val())
		idx, err := lpos.Result()
		switch {
		case errors.Is(err, redis.Nil):
			a.gone, a.pos = true, min(oldPos, a.total)
		case err != nil:
			return a, fmt.Errorf("find job %q in %s of queue %q: %w", id, state, queue, err)
		case asc:
			a.pos = a.total - 1 - int(idx)
		default:
			a.pos = int(idx)
		}
		return a, nil
	}
	var zscore *redis.FloatCmd
	var zrank, zcard *redis.IntCmd
	_, err = i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		zscore = p.ZScore(ctx, key, id)
		if asc {
			zrank = p.ZRank(ctx, key, id)
		} else {
			zrank = p.ZRevRank(ctx, key, id)
		}
		zcard = p.ZCard(ctx, key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return a, fmt.Errorf("find job %q in %s of queue %q: %w", id, state, queue, err)
	}
	a.total = int(zcard.Val())
	now, serr := zscore.Result()
	if serr == nil && (score == "" || strconv.FormatFloat(now, 'f', -1, 64) == score) {
		a.pos = int(zrank.Val())
		return a, nil
	}
	a.gone = true
	if score == "" {
		a.pos = min(oldPos, a.total)
		return a, nil
	}
	// The jobs that come before it in this order: those with a score
	// before its score, and those with its score whose id sorts before its
	// id (Redis orders equal scores by member, bytewise; reversed when
	// newest first).
	minS, maxS := "-inf", "("+score
	if !asc {
		minS, maxS = "("+score, "+inf"
	}
	var before *redis.IntCmd
	var ties *redis.StringSliceCmd
	_, err = i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		before = p.ZCount(ctx, key, minS, maxS)
		ties = p.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: score, Max: score, Count: tieScanLimit})
		return nil
	})
	if err != nil {
		return a, fmt.Errorf("find job %q in %s of queue %q: %w", id, state, queue, err)
	}
	a.pos = int(before.Val())
	for _, m := range ties.Val() {
		if (asc && m < id) || (!asc && m > id) {
			a.pos++
		}
	}
	return a, nil
}

// tieScanLimit bounds the jobs of one score that locate reads to place a
// cursor whose job left a sorted set. Jobs finished in the same millisecond
// share a score; past this many, some of them may show twice or be skipped
// (the page says Moved, Gone).
const tieScanLimit = 10000

// edgeScores reads the scores of a sorted-set state's jobs ids (for their
// cursors); a list's are "".
func (i *Inspector) edgeScores(ctx context.Context, queue string, state drover.JobState, ids ...string) ([]string, error) {
	out := make([]string, len(ids))
	key, isList, err := stateKey(i.keys(queue), state)
	if err != nil || isList {
		return out, err
	}
	cmds := make([]*redis.FloatCmd, len(ids))
	_, err = i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, id := range ids {
			cmds[n] = p.ZScore(ctx, key, id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read scores in %s of queue %q: %w", state, queue, err)
	}
	for n, c := range cmds {
		if s, err := c.Result(); err == nil {
			out[n] = strconv.FormatFloat(s, 'f', -1, 64)
		}
	}
	return out, nil
}
