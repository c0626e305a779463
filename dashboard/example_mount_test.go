package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// mount is the package doc's snippet and Handler's: the dashboard under a
// prefix of your own mux.
func mount(rdb redis.UniversalClient, users []dashboard.User, mux *http.ServeMux) {
	ins, _ := inspect.New(rdb, nil)
	h, _ := dashboard.New(ins, &dashboard.Options{Auth: &dashboard.Auth{Users: users}})
	mux.Handle("/queues/", http.StripPrefix("/queues", h))
	mux.Handle("/admin/queues/", http.StripPrefix("/admin/queues", h))
}

// The dashboard mounted in an application's mux, under /queues/.
func ExampleNew() {
	srv, err := redistest.SharedServer()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	mux := http.NewServeMux()
	mount(rdb, []dashboard.User{{Name: "ops", Role: dashboard.RoleAdmin, Token: "a-long-random-token-0123456789"}}, mux)
	for _, path := range []string{"/queues/healthz", "/admin/queues/readyz", "/queues/api/overview"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, rec.Code)
	}
	// Output:
	// /queues/healthz 200
	// /admin/queues/readyz 200
	// /queues/api/overview 401
}
