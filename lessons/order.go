package lessons

import (
	"crypto/sha256"
	"encoding/binary"
)

// Order returns the question's options in the order one viewer sees them:
// a permutation of Options that depends only on key and the question's id,
// so the same key always gives the same order and different keys give
// different, independent orders. The web pages pass the learner's id (""
// for a newcomer, which still shuffles, by the question alone), and a
// class session passes its own key (its join code) so everyone in the
// class sees one order. Options keep their ids ("a", "b", ... in the
// file's order): answers, progress and CSVs name options by id, never by
// position.
//
// The permutation is a Fisher–Yates shuffle whose i-th swap (i from n−1
// down to 1) takes index j = u mod (i+1), u being the first eight bytes,
// big-endian, of SHA-256("capacitylab option order v1" NUL key NUL id NUL
// i), so it is the same in every build and on every machine.
func (q *Question) Order(key string) []Option {
	out := make([]Option, len(q.Options))
	copy(out, q.Options)
	for i := len(out) - 1; i > 0; i-- {
		h := sha256.New()
		h.Write([]byte("capacitylab option order v1\x00" + key + "\x00" + q.ID + "\x00"))
		h.Write([]byte{byte(i)})
		u := binary.BigEndian.Uint64(h.Sum(nil)[:8])
		j := int(u % uint64(i+1))
		out[i], out[j] = out[j], out[i]
	}
	return out
}
