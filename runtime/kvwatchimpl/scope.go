package kvwatchimpl

import (
	"fmt"

	"github.com/kvwatchgen/kvwatchgen/internal/keys"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// For generated code. Scopes is what one watcher watches: the union of
// Values, or the whole bucket when All is set. The zero Scopes watches
// nothing. The generated Scopes types build it (KVWatchScopes).
type Scopes = config.Scopes

// For generated code. ScopeValue instantiates BucketSpec.Scopes[Scope] with
// one value per parameter of its prefix, in prefix order.
type ScopeValue = config.ScopeValue

// compiledScope is a ScopeSpec with what the runtime derives from it.
type compiledScope struct {
	spec   ScopeSpec
	prefix *Template
	// exact is set when a key template equals the prefix, so the key
	// "vpc.a" itself belongs to scope vpc=a; deeper when a template
	// extends it, so keys under "vpc.a." do.
	exact, deeper bool
}

// compileScopes checks the scopes of spec against the kind templates.
func compileScopes(spec *BucketSpec, templates []*Template) ([]compiledScope, error) {
	out := make([]compiledScope, 0, len(spec.Scopes))
	for _, s := range spec.Scopes {
		prefix, err := CompileTemplate(s.Prefix)
		if err != nil {
			return nil, fmt.Errorf("kvwatch: bucket %s: scope %s: %w", spec.Bucket, s.Name, err)
		}
		cs := compiledScope{spec: s, prefix: prefix}
		for _, t := range templates {
			if !prefix.IsPrefixOf(t) {
				continue
			}
			if t.Len() == prefix.Len() {
				cs.exact = true
			} else {
				cs.deeper = true
			}
		}
		if !cs.exact && !cs.deeper {
			return nil, fmt.Errorf("kvwatch: bucket %s: scope %s: prefix %q is not a token prefix of any key template", spec.Bucket, s.Name, s.Prefix)
		}
		out = append(out, cs)
	}
	return out, nil
}

// filters returns the subject filters of one scope value, after checking
// every parameter value. subjectPrefix is "$KV.<bucket>.".
func (cs *compiledScope) filters(subjectPrefix string, params []string) ([]string, error) {
	if err := checkScopeValues(cs.spec.Name, cs.prefix.Params(), params); err != nil {
		return nil, err
	}
	key := subjectPrefix + cs.prefix.Format(params)
	var out []string
	if cs.exact {
		out = append(out, key)
	}
	if cs.deeper {
		out = append(out, key+".>")
	}
	return out, nil
}

// checkScopeValues checks the values given for a scope's parameters
// (names): one each, each a valid key token (*ScopeError otherwise).
func checkScopeValues(scope string, names, params []string) error {
	if len(params) != len(names) {
		return fmt.Errorf("kvwatch: scope %s: %d values for %d parameters", scope, len(params), len(names))
	}
	for i, v := range params {
		if err := keys.ValidToken(v); err != nil {
			return &kvwatch.ScopeError{Scope: scope, Param: names[i], Value: v, Err: err}
		}
	}
	return nil
}
