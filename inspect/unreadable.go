package inspect

// Unreadable is a job whose hash does not decode (another tool wrote it, or
// it is damaged). Lists name it apart instead of failing whole: one bad hash
// must not hide a queue's other jobs from the operator.
type Unreadable struct {
	ID string `json:"id"`
	// Error says which field does not decode and why.
	Error string `json:"error"`
}
