package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"
)

// This file reads the nats CLI's contexts: JSON files in
// $XDG_CONFIG_HOME/nats/context/NAME.json (~/.config when unset), the
// selected one named in nats/context.txt. The fields read are those the
// nats CLI documents and writes (nats context save): url, user, password,
// creds, nkey, token, user_jwt, cert, key, ca, tls_first, inbox_prefix,
// jetstream_domain and jetstream_api_prefix. A context that needs more
// (an nsc:// lookup, a SOCKS proxy, the Windows certificate store) is
// refused with a message saying so, rather than connecting some other way.
// nats-io/jsm.go's natscontext reads them too, but brings a module (and
// its dependencies) for what is a file of JSON.

// natsContext is a nats CLI context file's settings.
type natsContext struct {
	name string // the name it was loaded by
	path string

	URL         string `json:"url"`
	User        string `json:"user"`
	Password    string `json:"password"`
	Creds       string `json:"creds"`
	NKey        string `json:"nkey"`
	Token       string `json:"token"`
	UserJWT     string `json:"user_jwt"`
	Cert        string `json:"cert"`
	Key         string `json:"key"`
	CA          string `json:"ca"`
	TLSFirst    bool   `json:"tls_first"`
	InboxPrefix string `json:"inbox_prefix"`
	JSDomain    string `json:"jetstream_domain"`
	JSAPIPrefix string `json:"jetstream_api_prefix"`

	NSC          string `json:"nsc"`
	SocksProxy   string `json:"socks_proxy"`
	WinCertStore string `json:"windows_cert_store"`
}

// contextDir is the nats CLI's configuration folder.
func contextDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "nats"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(home, ".config", "nats"), nil
}

// loadContext loads context name (a name, or the path of a context file),
// or the selected context when name is empty: nil when none is selected.
func loadContext(name string, getenv func(string) string) (*natsContext, error) {
	dir, err := contextDir(getenv)
	if err != nil {
		if name == "" {
			return nil, nil
		}
		return nil, fmt.Errorf("nats context %q: %w", name, err)
	}
	explicit := name != ""
	if !explicit {
		sel, err := os.ReadFile(filepath.Join(dir, "context.txt"))
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading the selected nats context: %w", err)
		}
		if name = strings.TrimSpace(string(sel)); name == "" {
			return nil, nil
		}
	}
	path := name
	if !strings.HasSuffix(name, ".json") || !strings.ContainsRune(name, filepath.Separator) {
		if strings.Contains(name, "..") || strings.ContainsRune(name, filepath.Separator) {
			return nil, fmt.Errorf("invalid nats context name %q", name)
		}
		path = filepath.Join(dir, "context", name+".json")
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		how := "-context"
		if !explicit {
			how = "the selected context (" + filepath.Join(dir, "context.txt") + ")"
		}
		return nil, fmt.Errorf("nats context %q not found (%s, named by %s): list them with \"nats context ls\"", name, path, how)
	} else if err != nil {
		return nil, fmt.Errorf("nats context %q: %w", name, err)
	}
	c := &natsContext{name: name, path: path}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("nats context %q (%s): %w", name, path, err)
	}
	switch {
	case c.NSC != "":
		return nil, fmt.Errorf("nats context %q looks its credentials up with nsc (%s), which kvwatchgen does not do: give them with -creds", name, c.NSC)
	case c.SocksProxy != "":
		return nil, fmt.Errorf("nats context %q connects through a SOCKS proxy, which kvwatchgen does not do", name)
	case c.WinCertStore != "":
		return nil, fmt.Errorf("nats context %q uses the Windows certificate store, which kvwatchgen does not read: give the files in cert, key and ca", name)
	}
	return c, nil
}

// options returns the connection options the context gives: its
// credentials (creds unless the -creds flag gives them), TLS and inbox
// prefix.
func (c *natsContext) options(haveCreds bool) ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case haveCreds:
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	case c.Creds != "":
		opts = append(opts, nats.UserCredentials(expandHome(c.Creds)))
	case c.UserJWT != "" && c.NKey != "":
		opts = append(opts, nats.UserJWTAndSeed(c.UserJWT, readSeed(expandHome(c.NKey))))
	case c.NKey != "":
		o, err := nats.NkeyOptionFromSeed(expandHome(c.NKey))
		if err != nil {
			return nil, fmt.Errorf("nats context %q: nkey: %w", c.name, err)
		}
		opts = append(opts, o)
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	}
	if c.Cert != "" && c.Key != "" {
		opts = append(opts, nats.ClientCert(expandHome(c.Cert), expandHome(c.Key)))
	}
	if c.CA != "" {
		opts = append(opts, nats.RootCAs(expandHome(c.CA)))
	}
	if c.TLSFirst {
		opts = append(opts, nats.TLSHandshakeFirst())
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	return opts, nil
}

// readSeed reads an nkey seed file; an unreadable one is the empty seed,
// which the server refuses (nats.go reports it at connect).
func readSeed(path string) string {
	data, _ := os.ReadFile(path)
	return strings.TrimSpace(string(data))
}

// expandHome expands a leading "~/" as the nats CLI does.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}
