package bleveindex

import (
	"unicode"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	segment "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
)

// textAnalyzer is how message text and query text are cut into terms: Bleve's CJK analysis
// (words, lower case, bigrams of CJK runs) with Hangul bigrammed as well. Korean words carry
// particles (서울에서, "in Seoul"), so a whole-word term would not find 서울; Bleve's word
// segmentation marks Han and kana as ideographic but Hangul as letters, which its bigram
// filter passes through whole.
const textAnalyzer = "msggate_text"

// hangulName is the token filter that marks Hangul words ideographic for the bigram filter.
const hangulName = "msggate_hangul_ideographic"

type hangulFilter struct{}

func (hangulFilter) Filter(in analysis.TokenStream) analysis.TokenStream {
	for _, t := range in {
		if t.Type == analysis.Ideographic {
			continue
		}
		for _, r := range string(t.Term) {
			if unicode.Is(unicode.Hangul, r) {
				t.Type = analysis.Ideographic
				break
			}
		}
	}
	return in
}

func init() {
	err := registry.RegisterTokenFilter(hangulName, func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
		return hangulFilter{}, nil
	})
	if err != nil {
		panic(err)
	}
}

// addTextAnalyzer adds textAnalyzer to m.
func addTextAnalyzer(m *mapping.IndexMappingImpl) error {
	return m.AddCustomAnalyzer(textAnalyzer, map[string]any{
		"type":          custom.Name,
		"tokenizer":     segment.Name,
		"token_filters": []string{cjk.WidthName, lowercase.Name, hangulName, cjk.BigramName},
	})
}
