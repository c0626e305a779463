// Package statedump takes and compares snapshots of the Redis keys under a
// prefix, for the differential tests that check drover leaves Redis exactly
// as Node BullMQ 6.7.0 would.
//
// # Dump
//
// [Dump] reads every key under "<prefix>:" with its type, whether it has an
// expiry, and its contents: strings, lists in order, sets sorted, sorted
// sets with their scores in score order, hashes, and streams as the ordered
// list of entries, each with its id and its field/value list in order. Key
// names are kept relative to the prefix ("q:wait"), so runs under different
// prefixes compare. [Snapshot.Format] prints a snapshot for test logs.
//
// # Normalize
//
// Two runs of the same scenario never produce byte-identical Redis states:
// clocks, stream ids and lock tokens differ. [Normalize] replaces those with
// placeholders; each rule can be turned off in [NormalizeOptions]:
//
//   - timestamps: integers within a window (default: any 13-digit ms value)
//     as whole string, hash or stream values, inside JSON values (e.g.
//     opts.timestamp), and as scores of completed, failed,
//     waiting-children, repeat, marker and :unsuccessful sets → "<ts>";
//   - delayed scores (dueMs·4096+seq) → "<ts>", or "<due#i>" keeping only
//     the due-time order ([ScoreOrder]); prioritized scores are kept;
//   - stream entry ids → "<id>"; values of ":lock" keys → "<token>";
//     meta's version field → "<version>";
//   - JSON objects and arrays → canonical JSON (sorted keys, "\/" and "/"
//     alike, numbers kept as written);
//   - the prefix inside values and hash field names → "<prefix>"; UUIDs
//     → "<uuid>";
//   - optionally masked hash fields (e.g. stacktrace) and dropped keys.
//
// # Diff
//
// [Diff] lists the differences between two (normalized) snapshots, one
// readable line each: keys only on one side, type or expiry changes, and
// the differing list positions, set members, sorted-set entries, hash
// fields and stream entries.
//
//	a, _ := statedump.Dump(ctx, rdb, nodePrefix)
//	b, _ := statedump.Dump(ctx, rdb, droverPrefix)
//	na, _ := statedump.Normalize(a, nil)
//	nb, _ := statedump.Normalize(b, nil)
//	require.Empty(t, statedump.Diff(na, nb))
package statedump
