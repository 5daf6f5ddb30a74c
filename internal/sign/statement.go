package sign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// InTotoStatementType is the in-toto Statement version Attest writes (v1,
// through the in-toto attestation bindings; cosign v2 reads it as it reads
// v0.1, and VerifyAttestations reads both).
const InTotoStatementType = intoto.StatementTypeUri

// NewStatement returns the bytes of the in-toto Statement that Attest signs
// for ref: built and validated with the in-toto attestation bindings, the
// predicate a JSON object (carried as a protobuf Struct: keys sorted,
// numbers as JSON numbers), encoded compactly so that the same statement
// always gives the same bytes.
func NewStatement(ref name.Digest, predicateType string, predicate []byte) ([]byte, error) {
	if predicateType == "" {
		return nil, fmt.Errorf("attesting %s: predicate type is empty", ref)
	}
	var pred structpb.Struct
	if err := protojson.Unmarshal(predicate, &pred); err != nil {
		return nil, fmt.Errorf("attesting %s: predicate is not a JSON object: %w", ref, err)
	}
	if err := exactNumbers(predicate); err != nil {
		return nil, fmt.Errorf("attesting %s: %w", ref, err)
	}
	alg, hex, ok := cutDigest(ref.DigestStr())
	if !ok {
		return nil, fmt.Errorf("attesting %s: malformed digest", ref)
	}
	st := &intoto.Statement{
		Type:          InTotoStatementType,
		Subject:       []*intoto.ResourceDescriptor{{Name: ref.Context().Name(), Digest: map[string]string{alg: hex}}},
		PredicateType: predicateType,
		Predicate:     &pred,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("attesting %s: %w", ref, err)
	}
	return marshalProto(st)
}

// ParseStatement reads an in-toto Statement (v1 or v0.1) with the in-toto
// attestation bindings and checks it with their validator; it also returns
// the predicate's JSON exactly as the statement carries it.
func ParseStatement(b []byte) (*intoto.Statement, json.RawMessage, error) {
	var st intoto.Statement
	if err := protojson.Unmarshal(b, &st); err != nil {
		return nil, nil, fmt.Errorf("reading the in-toto statement: %w", err)
	}
	if err := st.Validate(); err != nil {
		return nil, nil, fmt.Errorf("invalid in-toto statement: %w", err)
	}
	var raw struct {
		Predicate json.RawMessage `json:"predicate"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("reading the in-toto statement: %w", err)
	}
	return &st, raw.Predicate, nil
}

// exactNumbers refuses a predicate with an integer that a protobuf Struct
// (float64 numbers) would change: what is signed must be what was given.
func exactNumbers(predicate []byte) error {
	dec := json.NewDecoder(bytes.NewReader(predicate))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("predicate is not JSON: %w", err)
		}
		n, ok := tok.(json.Number)
		if !ok || strings.ContainsAny(n.String(), ".eE") {
			continue
		}
		i, ok := new(big.Int).SetString(n.String(), 10)
		if !ok || i.CmpAbs(big.NewInt(1<<53)) > 0 {
			return fmt.Errorf("predicate number %s is beyond 2^53: an in-toto predicate (a protobuf Struct) holds numbers as float64; write it as a string", n)
		}
	}
}

// marshalProto encodes m as compact JSON. protojson varies its whitespace
// on purpose (so that nobody relies on its bytes); compacting removes the
// variation, and field order (declaration order, map keys sorted) is
// fixed, so the same message always gives the same bytes.
func marshalProto(m proto.Message) ([]byte, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
