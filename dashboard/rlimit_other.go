//go:build !unix

package dashboard

// openFileLimit is the process's open-file limit, 0 if unknown.
func openFileLimit() int { return 0 }
