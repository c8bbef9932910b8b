package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/tpproxy/tpproxy/internal/config"
)

// envPrefix starts every environment variable that sets a key:
// backend.pool_size is TPPROXY_BACKEND_POOL_SIZE.
const envPrefix = "TPPROXY_"

// usersKey is the one key that cannot come from the environment: it is a
// list of mappings.
const usersKey = "users"

// Problems found while reading the layers, wrapped in config.FieldErrors.
var (
	// errUnknownKey is a key in the file that tpproxy does not know.
	errUnknownKey = errors.New("unknown key")
	// errUnknownEnv is a TPPROXY_ variable that matches no key.
	errUnknownEnv = errors.New("matches no configuration key")
	// errUsersEnv is an attempt to set the users list from the environment.
	errUsersEnv = errors.New("users can only be set in the configuration file")
)

// flagKey pairs a command-line flag with the key it overrides.
type flagKey struct {
	flag, key, usage string
}

// configFlagKeys lists the flags that override file and environment.
func configFlagKeys() []flagKey {
	return []flagKey{
		{"listen", "listen", "client address host:port"},
		{"backend-addr", "backend.addr", "backend server host:port"},
		{"backend-user", "backend.user", "backend service account"},
		{"backend-password", "backend.password", "backend password (visible in ps: prefer the file or TPPROXY_BACKEND_PASSWORD)"},
		{"pool-size", "backend.pool_size", "number of backend connections, or auto"},
		{"log-level", "log.level", "debug, info, warn or error"},
		{"log-format", "log.format", "text or json"},
	}
}

// addConfigFlags registers --config and the override flags on fs.
func addConfigFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML configuration file")
	for _, f := range configFlagKeys() {
		// Strings all, parsed as the file's values are (--pool-size=auto).
		fs.String(f.flag, "", f.usage+" ("+f.key+")")
	}
}

// loadConfig builds the configuration from, lowest precedence first:
// config.Default(), the YAML file at path, TPPROXY_* variables in env
// ("KEY=value" strings as from os.Environ) and the flags in flags that were
// set. It validates the result and returns every problem at once, joined,
// each naming its key (or the file and line for YAML syntax errors). flags
// may be nil.
func loadConfig(path string, flags *pflag.FlagSet, env []string) (*config.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		var pe viper.ConfigParseError
		if errors.As(err, &pe) {
			err = pe.Unwrap()
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}

	schema := reflect.TypeFor[config.Config]()
	// source names where a key set outside the file came from, for messages.
	source := make(map[string]string)
	problems := applyEnv(v, schema, env, source)
	if flags != nil {
		for _, f := range configFlagKeys() {
			if fl := flags.Lookup(f.flag); fl != nil && fl.Changed {
				v.Set(f.key, fl.Value.String())
				source[f.key] = "--" + f.flag
			}
		}
	}
	problems = append(problems, unknownKeys("", v.AllSettings(), schema)...)
	autoWords(v)

	cfg := config.Default()
	decodeErr := v.Unmarshal(&cfg, viper.DecodeHook(mapstructure.ComposeDecodeHookFunc(enumHook(), durationHook, byteSizeHook, strictScalarHook)))
	decodeProblems := decodeErrors(decodeErr)
	problems = append(problems, decodeProblems...)

	// A value that failed to decode kept its default; do not also report
	// what Validate thinks of that default.
	for _, p := range config.Errors(cfg.Validate()) {
		if !coveredBy(p, decodeProblems) {
			problems = append(problems, p)
		}
	}
	for i, p := range problems {
		problems[i] = withSource(p, source)
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// withSource notes in p the environment variable or flag that set its key,
// when it was not the file.
func withSource(p error, source map[string]string) error {
	var fe *config.FieldError
	if !errors.As(p, &fe) {
		return p
	}
	src, ok := source[fe.Key]
	if !ok {
		return p
	}
	return &config.FieldError{Key: fe.Key, Err: fmt.Errorf("%w (set by %s)", fe.Err, src)}
}

// applyEnv sets every key named by a TPPROXY_ variable in env and records
// the variable in source.
func applyEnv(v *viper.Viper, schema reflect.Type, env []string, source map[string]string) []error {
	byEnv := make(map[string]string)
	for _, key := range leafKeys("", schema) {
		byEnv[envName(key)] = key
	}
	var problems []error
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) {
			continue
		}
		key, ok := byEnv[name]
		switch {
		case key == usersKey:
			problems = append(problems, fmt.Errorf("environment %s: %w", name, errUsersEnv))
		case !ok:
			problems = append(problems, fmt.Errorf("environment %s: %w", name, errUnknownEnv))
		default:
			v.Set(key, value)
			source[key] = name
		}
	}
	return problems
}

// envName is the environment variable for key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// leafKeys lists the dotted keys of the scalar and list fields of the struct
// type t.
func leafKeys(prefix string, t reflect.Type) []string {
	var keys []string
	for _, f := range fileFields(t) {
		key := prefix + fileKey(f)
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, leafKeys(key+".", f.Type)...)
		} else {
			keys = append(keys, key)
		}
	}
	return keys
}

// fileFields lists the fields of struct type t that are file keys, in order:
// its own tagged fields and those of the structs it embeds with ",squash"
// (config.ThreadPool embeds scheduler.Config, config.Backend pool.Config).
// Fields tagged "-", and those an outer field shadows, are not keys. Each
// field's Index reaches it from t (reflect.Value.FieldByIndex).
func fileFields(t reflect.Type) []reflect.StructField {
	var fields []reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		if name := fileKey(f); name != "" && name != "-" {
			fields = append(fields, f)
		}
	}
	return fields
}

// fileKey is the key of a field: its mapstructure tag without options.
func fileKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
	return name
}

// fieldByKey finds the field of struct type t whose key is key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for _, f := range fileFields(t) {
		if strings.EqualFold(fileKey(f), key) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// unknownKeys walks settings (as read from YAML) along the struct type t and
// reports every key t has no field for. Values of the wrong shape are left to
// the decoder to report.
func unknownKeys(prefix string, settings any, t reflect.Type) []error {
	switch t.Kind() {
	case reflect.Struct:
		m, ok := settings.(map[string]any)
		if !ok {
			return nil
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		var problems []error
		for _, k := range names {
			f, ok := fieldByKey(t, k)
			if !ok {
				err := errUnknownKey
				if guess := closestKey(k, t); guess != "" {
					err = fmt.Errorf("%w (did you mean %s%s?)", errUnknownKey, prefix, guess)
				}
				problems = append(problems, &config.FieldError{Key: prefix + k, Err: err})
				continue
			}
			problems = append(problems, unknownKeys(prefix+k+".", m[k], f.Type)...)
		}
		return problems
	case reflect.Slice:
		list, ok := settings.([]any)
		if !ok {
			return nil
		}
		var problems []error
		base := strings.TrimSuffix(prefix, ".")
		for i, item := range list {
			problems = append(problems, unknownKeys(fmt.Sprintf("%s[%d].", base, i), item, t.Elem())...)
		}
		return problems
	}
	return nil
}

// closestKey returns the key of struct type t nearest to the misspelt k, or
// "" when none is close.
func closestKey(k string, t reflect.Type) string {
	best, bestDist := "", 3 // suggest at most two edits away
	for _, f := range fileFields(t) {
		name := fileKey(f)
		if d := editDistance(k, name); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// durationHook decodes "10s"-style strings into time.Duration and rejects
// bare numbers other than 0, which would silently mean nanoseconds.
func durationHook(_ reflect.Type, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[time.Duration]() {
		return data, nil
	}
	if s, ok := data.(string); ok {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("cannot parse %q as a duration (e.g. 500ms, 10s, 1h)", s)
		}
		return d, nil
	}
	if n := reflect.ValueOf(data); n.CanInt() || n.CanUint() || n.CanFloat() {
		if n.IsZero() {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("%v has no unit (write e.g. %vs)", data, data)
	}
	return nil, fmt.Errorf("cannot use %s as a duration (e.g. 500ms, 10s, 1h)", showValue(data))
}

// enumHook decodes the words of the settings table's enums whose fields
// are numbers (thread_pool.algorithm is a scheduler.Algorithm), with the
// table's message for a word it does not know. Enums held as strings are
// left to Validate.
func enumHook() mapstructure.DecodeHookFuncType {
	enums := make(map[reflect.Type]config.Setting)
	for _, s := range config.Settings() {
		if s.Kind == config.KindEnum && s.FieldType().Kind() != reflect.String {
			enums[s.FieldType()] = s
		}
	}
	return func(_ reflect.Type, to reflect.Type, data any) (any, error) {
		s, ok := enums[to]
		if !ok {
			return data, nil
		}
		w, ok := data.(string)
		if !ok {
			return nil, &config.BoundsError{Want: s.Want(), Got: showValue(data)}
		}
		n, err := s.ParseWord(w)
		if err != nil {
			return nil, err
		}
		return reflect.ValueOf(n).Convert(to).Interface(), nil
	}
}

// byteSizeHook decodes integers and "16MiB"-style strings into
// config.ByteSize.
func byteSizeHook(_ reflect.Type, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[config.ByteSize]() {
		return data, nil
	}
	switch n := reflect.ValueOf(data); {
	case n.Kind() == reflect.String:
		return config.ParseByteSize(n.String())
	case n.CanUint():
		return config.ByteSize(n.Uint()), nil
	case n.CanInt() && n.Int() >= 0:
		return config.ByteSize(n.Int()), nil
	case n.CanInt() || n.CanFloat():
		return nil, fmt.Errorf("%v is %w", data, config.ErrByteSize)
	}
	return data, nil
}

// autoWords turns the words that stand for an integer setting's 0 into
// it: backend.pool_size: auto (from the file, the environment or a flag).
func autoWords(v *viper.Viper) {
	for _, key := range []string{"backend.pool_size"} {
		if w, ok := v.Get(key).(string); ok && strings.EqualFold(strings.TrimSpace(w), "auto") {
			v.Set(key, 0)
		}
	}
}

// strictScalarHook refuses the conversions of viper's weak typing that
// would silently change a value from the file: a YAML number or boolean where
// a string belongs (password: 0123, server_version: 8.0), a fraction or a
// boolean where an integer belongs, a number where a boolean belongs, a
// single value where a list belongs. Strings, which is all the environment
// and flags provide, are still parsed.
func strictScalarHook(_ reflect.Type, to reflect.Type, data any) (any, error) {
	v := reflect.ValueOf(data)
	if !v.IsValid() || v.Kind() == reflect.String {
		return data, nil
	}
	number := v.CanInt() || v.CanUint() || v.CanFloat()
	switch to.Kind() {
	case reflect.String:
		if number || v.Kind() == reflect.Bool {
			return nil, fmt.Errorf("cannot use %v (want a string: put it in quotes)", data)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Kind() == reflect.Bool || (v.CanFloat() && v.Float() != math.Trunc(v.Float())) {
			return nil, fmt.Errorf("cannot use %v (want %s)", data, wantKind(to))
		}
	case reflect.Bool:
		if number {
			return nil, fmt.Errorf("cannot use %v (want true or false)", data)
		}
	case reflect.Slice:
		if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
			return nil, fmt.Errorf("cannot use %s (want a list)", showValue(data))
		}
	}
	return data, nil
}

// decodeErrors turns the decoder's nested errors into one FieldError per
// failed key.
func decodeErrors(err error) []error {
	if err == nil {
		return nil
	}
	var de *mapstructure.DecodeError
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		var out []error
		for _, sub := range e.Unwrap() {
			out = append(out, decodeErrors(sub)...)
		}
		return out
	case *mapstructure.DecodeError:
		if inner := e.Unwrap(); errors.As(inner, &de) {
			return decodeErrors(inner)
		}
		return []error{&config.FieldError{Key: e.Name(), Err: describeDecode(e.Unwrap())}}
	}
	if inner := errors.Unwrap(err); inner != nil && errors.As(inner, &de) {
		return decodeErrors(inner)
	}
	return []error{err}
}

// describeDecode rewords the decoder's type errors in the file's terms.
func describeDecode(err error) error {
	var pe *mapstructure.ParseError
	var ue *mapstructure.UnconvertibleTypeError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("cannot parse %s (want %s)", showValue(pe.Value), wantKind(pe.Expected.Type()))
	case errors.As(err, &ue):
		return fmt.Errorf("cannot use %s (want %s)", showValue(ue.Value), wantKind(ue.Expected.Type()))
	}
	return err
}

// showValue prints a value from the file, quoted if it is a string and
// shortened if it is long.
func showValue(v any) string {
	var s string
	if str, ok := v.(string); ok {
		s = fmt.Sprintf("%q", str)
	} else {
		s = fmt.Sprintf("%v", v)
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return s
}

// wantKind names what a field of type t accepts.
func wantKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	}
	return t.String()
}

// coveredBy reports whether p concerns a key (or a key below one) that
// already failed to decode.
func coveredBy(p error, decodeProblems []error) bool {
	var fe *config.FieldError
	if !errors.As(p, &fe) {
		return false
	}
	for _, d := range decodeProblems {
		var dfe *config.FieldError
		if !errors.As(d, &dfe) {
			continue
		}
		if fe.Key == dfe.Key || strings.HasPrefix(fe.Key, dfe.Key+".") || strings.HasPrefix(fe.Key, dfe.Key+"[") {
			return true
		}
	}
	return false
}
