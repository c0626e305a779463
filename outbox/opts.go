package outbox

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/jobcodec"
)

// encodeOpts returns the opts column for o: nil for nil. The column holds
// the opts JSON Queue.Add stores in a job hash (and Node stores), written by
// the one options codec, internal/jobcodec.
func encodeOpts(o *drover.JobOptions) ([]byte, error) {
	if o == nil {
		return nil, nil
	}
	s, err := jobcodec.OptionsToOpts(o)
	if err != nil {
		return nil, err
	}
	return s.AppendJSON(nil), nil
}

// decodeOpts reads an opts column back: nil for NULL. A row written before
// the column took the stored opts JSON (drover's own format, see
// opts_legacy.go) is read with that format's reader, so no pending row is
// lost across the upgrade.
func decodeOpts(b []byte) (*drover.JobOptions, error) {
	if b == nil {
		return nil, nil
	}
	legacy, err := isLegacyOpts(b)
	if err != nil {
		return nil, err
	}
	if legacy {
		return decodeLegacyOpts(b)
	}
	s, err := jobcodec.DecodeOpts(string(b))
	if err != nil {
		return nil, fmt.Errorf("opts column: %w", err)
	}
	if len(s.Extra) > 0 {
		return nil, fmt.Errorf("opts column has options drover does not know: %s", strings.Join(slices.Sorted(maps.Keys(s.Extra)), ", "))
	}
	return jobcodec.OptsToOptions(&s).(*drover.JobOptions), nil
}

// encodeData is the data column: the bytes Queue.Add stores for data, from
// the same encoder (jobcodec.EncodeData), so a job relayed from the outbox
// stores what a direct add stores.
func encodeData(v any) ([]byte, error) { return jobcodec.EncodeData(v) }

// jsonData hands a row's stored JSON to Queue.AddBulk as it is.
func jsonData(b []byte) json.RawMessage { return json.RawMessage(b) }
