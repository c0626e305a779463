package idempotency_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/seed40057009/drover/idempotency"
)

// OpKey builds a key from business parts; separators inside a part are
// escaped, so different parts never give the same key.
func ExampleOpKey() {
	fmt.Println(idempotency.OpKey("charge", "order", "42"))
	fmt.Println(idempotency.OpKey("a:b", "c"))
	fmt.Println(idempotency.OpKey("a", "b:c"))

	// Output:
	// charge:order:42
	// a\:b:c
	// a:b\:c
}

// The key that Do puts in the context travels to the upstream API as its
// idempotency key, so a retried call is answered, not repeated.
func ExampleKeyFrom() {
	newRequest := func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://payments.example/charges", nil)
		if err != nil {
			return nil, err
		}
		if key, ok := idempotency.KeyFrom(ctx); ok {
			req.Header.Set("Idempotency-Key", key)
		}
		return req, nil
	}

	ctx := idempotency.WithKey(context.Background(), idempotency.OpKey("charge", "order-42"))
	req, err := newRequest(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(req.Header.Get("Idempotency-Key"))

	// Output:
	// charge:order-42
}
