package inspect

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/keys"
)

// Cursor marks where a page of Jobs ended (JobPage.NextCursor) or began
// (JobPage.PrevCursor): the job at that edge, the position it had, and in
// a sorted-set state its score; in a list state, also the few jobs next to
// it on either side. Turning a page from a cursor finds that job again
// wherever it is now, so jobs that entered or left the state before it
// shift no job out of view and show none twice; when the edge job itself
// left a list, the nearest of its neighbours still there says where the
// page goes on (a list only changes at its two ends or by removals, so
// the jobs between a neighbour and the edge all left too). Treat it as
// opaque; ParseCursor checks one that came back from a client.
type Cursor string

// cursorNeighbours is how many jobs on each side of its edge job a list
// cursor names: enough that a page goes on in the right place when a
// worker or a bulk action took a few jobs at the page's edge, few enough
// that a cursor stays short in a URL and a turn costs a few LPOS.
const cursorNeighbours = 4

// cursorParts is a Cursor read: the edge job and, in a list, its
// neighbours in the listed order, nearest first.
type cursorParts struct {
	pos   int
	score string
	id    string
	// before and after are the jobs listed right before and right after
	// the edge job when the cursor was made (lists only).
	before, after []string
}

// cursorOf builds the cursor of the job id at pos (score "" in a list).
func cursorOf(pos int, score, id string, before, after []string) Cursor {
	c := strconv.Itoa(pos) + ":" + score + ":" + escapeCursorID(id)
	if len(before)+len(after) > 0 {
		c += ":" + joinCursorIDs(before) + ":" + joinCursorIDs(after)
	}
	return Cursor(c)
}

// escapeCursorID escapes the characters that separate a cursor's parts,
// so any id (BullMQ refuses ':' in custom ids, but a list may hold
// anything) reads back as itself.
func escapeCursorID(id string) string {
	return cursorIDEscaper.Replace(id)
}

var cursorIDEscaper = strings.NewReplacer("%", "%25", ":", "%3A", ",", "%2C")

func joinCursorIDs(ids []string) string {
	out := make([]string, len(ids))
	for n, id := range ids {
		out[n] = escapeCursorID(id)
	}
	return strings.Join(out, ",")
}

// ParseCursor checks a cursor that a client sent back. The error names
// what is wrong; wrap it in drover.ErrInvalidOption terms for the caller.
func ParseCursor(s string) (Cursor, error) {
	c := Cursor(s)
	if _, err := c.parts(); err != nil {
		return "", err
	}
	return c, nil
}

func (c Cursor) parts() (cursorParts, error) {
	bad := func(why string) (cursorParts, error) {
		return cursorParts{}, fmt.Errorf("%w: cursor %q %s", drover.ErrInvalidOption, string(c), why)
	}
	f := strings.Split(string(c), ":")
	if len(f) != 3 && len(f) != 5 {
		return bad("is not one a page of jobs gave (position:score:job id)")
	}
	var p cursorParts
	var err error
	if p.pos, err = strconv.Atoi(f[0]); err != nil || p.pos < 0 {
		return bad("has a position that is not a whole number >= 0")
	}
	if p.score = f[1]; p.score != "" {
		if _, err := strconv.ParseFloat(p.score, 64); err != nil {
			return bad("has a score that is not a number")
		}
	}
	if p.id, err = url.PathUnescape(f[2]); err != nil || p.id == "" {
		return bad("has no job id")
	}
	if len(f) == 5 {
		if p.score != "" {
			return bad("names neighbours, which only a list's cursor does")
		}
		for n, side := range []*[]string{&p.before, &p.after} {
			if f[3+n] == "" {
				continue
			}
			for _, e := range strings.Split(f[3+n], ",") {
				id, err := url.PathUnescape(e)
				if err != nil || id == "" {
					return bad("has a neighbour that is not a job id")
				}
				*side = append(*side, id)
			}
			if len(*side) > cursorNeighbours {
				return bad(fmt.Sprintf("names more than %d neighbours on one side", cursorNeighbours))
			}
		}
	}
	return p, nil
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
	// them); in a list, next to the nearest of its neighbours still
	// there, or, when they all left too, at its old position: Approximate.
	Gone bool `json:"gone"`
	// Approximate: the job left and nothing the cursor named places the
	// page (in a list, every neighbour it named left too), so the page
	// starts at the job's old position, and jobs that moved meanwhile may
	// be skipped or shown twice.
	Approximate bool `json:"approximate,omitempty"`
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
	// approx: a list job gone with all its neighbours; pos is its old one.
	approx bool
}

// listSearchSlack bounds how far past its old position LPOS looks for a
// cursor's job in a list: far enough for the jobs added while an operator
// reads a page, and a deep page still costs what its LRANGE costs.
const listSearchSlack = 10000

// locate finds the cursor's job in the state's key, in the order asc says:
// Z(REV)RANK in a sorted set (its score must match, else it moved: the
// score says where it would be), a bounded LPOS in a list, and there,
// when the job left, LPOS of its neighbours.
func (i *Inspector) locate(ctx context.Context, queue string, state drover.JobState, asc bool, c Cursor) (anchor, error) {
	cp, err := c.parts()
	if err != nil {
		return anchor{}, err
	}
	oldPos, score, id := cp.pos, cp.score, cp.id
	key, isList, err := stateKey(i.keys(queue), state)
	if err != nil {
		return anchor{}, err
	}
	var a anchor
	if isList {
		return i.locateInList(ctx, queue, state, key, asc, cp)
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
		// No score to place it by (it left before the page read it).
		a.pos, a.approx = min(oldPos, a.total), true
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

// locateInList is locate in a list. It looks for the edge job first and
// only when that left for its neighbours, nearest first, one on each side
// in turn: the first found says where the page goes on (right after a job
// listed before the edge, at a job listed after it).
func (i *Inspector) locateInList(ctx context.Context, queue string, state drover.JobState, key string, asc bool, cp cursorParts) (anchor, error) {
	var a anchor
	fail := func(err error) (anchor, error) {
		return a, fmt.Errorf("find job %q in %s of queue %q: %w", cp.id, state, queue, err)
	}
	rank := int64(1) // newest first reads the list from its head
	if asc {
		rank = -1 // oldest first reads it from its tail
	}
	// maxLen bounds each LPOS: far enough past the old position for the
	// jobs added while an operator reads a page.
	maxLen := int64(cp.pos + cursorNeighbours + listSearchSlack)
	// listed turns LPOS's index (from the head) into the listed position.
	listed := func(idx int64) int {
		if asc {
			return a.total - 1 - int(idx)
		}
		return int(idx)
	}
	var edge *redis.IntCmd
	var llen *redis.IntCmd
	_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		edge = p.LPos(ctx, key, cp.id, redis.LPosArgs{Rank: rank, MaxLen: maxLen})
		llen = p.LLen(ctx, key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fail(err)
	}
	a.total = int(llen.Val())
	idx, err := edge.Result()
	switch {
	case err == nil:
		a.pos = listed(idx)
		return a, nil
	case !errors.Is(err, redis.Nil):
		return fail(err)
	}
	a.gone, a.pos = true, min(cp.pos, a.total)
	// The neighbours in the order they are tried, and which side each is.
	type nb struct {
		id     string
		before bool
	}
	var order []nb
	for n := range max(len(cp.before), len(cp.after)) {
		if n < len(cp.before) {
			order = append(order, nb{cp.before[n], true})
		}
		if n < len(cp.after) {
			order = append(order, nb{cp.after[n], false})
		}
	}
	if len(order) == 0 {
		a.approx = true
		return a, nil
	}
	found := make([]*redis.IntCmd, len(order))
	_, err = i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, o := range order {
			found[n] = p.LPos(ctx, key, o.id, redis.LPosArgs{Rank: rank, MaxLen: maxLen})
		}
		llen = p.LLen(ctx, key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fail(err)
	}
	a.total = int(llen.Val())
	a.pos, a.approx = min(cp.pos, a.total), true
	for n, o := range order {
		idx, err := found[n].Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		a.pos, a.approx = listed(idx), false
		if o.before {
			a.pos++
		}
		break
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
