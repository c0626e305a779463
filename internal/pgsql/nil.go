package pgsql

import "reflect"

// IsNil reports whether v, a database handle or transaction handed to the
// kit, is nil: a nil interface (a pgx.Tx, a PostgresDB) or a nil pointer
// inside one (a (*sql.Tx)(nil), a (*pgxpool.Pool)(nil)). The kit checks its
// inputs with it so that a missing handle is an error that names it, not a
// nil-pointer panic deep inside pgx or database/sql.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
