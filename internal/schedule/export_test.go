package schedule

// ExpandHashed exposes expandHashed to the tests.
var ExpandHashed = expandHashed
