package aiready

import (
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Tokenizers chunks can be counted with: BPE vocabularies compiled into the binary,
// so nothing is downloaded at run time.
const (
	TokenizerCL100K = "cl100k_base"
	TokenizerO200K  = "o200k_base"
)

var codecs sync.Map // encoding name → func() (tokenizer.Codec, error)

// Tokens counts text's tokens with the named BPE vocabulary ("" is cl100k_base).
func Tokens(encoding, text string) (int, error) {
	c, err := codec(encoding)
	if err != nil {
		return 0, err
	}
	return c.Count(text)
}

// codec returns the named vocabulary's codec, built once (its vocabulary map is built
// on first use, about 0.1 s).
func codec(encoding string) (tokenizer.Codec, error) {
	if encoding == "" {
		encoding = TokenizerCL100K
	}
	if encoding != TokenizerCL100K && encoding != TokenizerO200K {
		return nil, fmt.Errorf("aiready: no tokenizer %q", encoding)
	}
	f, _ := codecs.LoadOrStore(encoding, sync.OnceValues(func() (tokenizer.Codec, error) {
		return tokenizer.Get(tokenizer.Encoding(encoding))
	}))
	return f.(func() (tokenizer.Codec, error))()
}

// counter counts tokens with one vocabulary, for one document (it is not safe for
// concurrent use).
type counter struct {
	c tokenizer.Codec
	// short remembers the counts of short strings: the separators between a chunk's
	// parts are counted again at every part, and a count has a cost of its own
	// whatever the length.
	short map[string]int
}

func newCounter(encoding string) (*counter, error) {
	c, err := codec(encoding)
	if err != nil {
		return nil, err
	}
	return &counter{c: c, short: map[string]int{}}, nil
}

func (t *counter) count(s string) int {
	if s == "" {
		return 0
	}
	if len(s) <= 8 {
		if n, ok := t.short[s]; ok {
			return n
		}
		n := t.countText(s)
		t.short[s] = n
		return n
	}
	return t.countText(s)
}

func (t *counter) countText(s string) int {
	n, err := t.c.Count(s)
	if err != nil {
		// Count fails only on invalid UTF-8 in strict mode, which is not set: a
		// byte a token is the bound.
		return len(s)
	}
	return n
}
