package lab

// Evaluate exposes evaluate to the tests of package lab_test.
func (r *Result) Evaluate() { r.evaluate() }

// QueryNames lists the queries of the dialect's embedded file.
func QueryNames(d *DB) map[string]string { return d.queries }
