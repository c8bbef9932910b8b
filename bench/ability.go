package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
)

// AbilityAttr is the workload of the published thread-pool capacity
// tests: an application/ability/attribute data model (client_app,
// app_ability, ability_attr, conf_attr) and one autocommit lookup per
// transaction, SELECT attrvalue FROM ability_attr WHERE pkid=? AND
// attrcode=?, on the composite index.
const AbilityAttr = "ability_attr"

// Row counts of the ability_attr tables at scale 1, as in the reports.
const (
	abilityClientApps = 200_000
	abilityAbilities  = 300_000
	abilityAttrsEach  = 4 // 1.2M ability_attr rows
	abilityConfAttrs  = 10_000
)

// abilitySizes are the table sizes at a scale.
type abilitySizes struct{ apps, abilities, confAttrs int }

func sizesAt(scale float64) abilitySizes {
	if scale <= 0 {
		scale = 1
	}
	n := func(base, least int) int { return max(int(math.Round(float64(base)*scale)), least) }
	return abilitySizes{
		apps:      n(abilityClientApps, 1),
		abilities: n(abilityAbilities, 1),
		confAttrs: n(abilityConfAttrs, abilityAttrsEach),
	}
}

// attrCode is the code of conf_attr row n (1-based).
func attrCode(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 5 {
		s = "0" + s
	}
	return "attr_" + s
}

// abilityCode returns the conf_attr row of ability p's j-th attribute:
// consecutive, so that an ability's attributes are distinct.
func abilityCode(z abilitySizes, p, j int) int {
	return (p*abilityAttrsEach+j)%z.confAttrs + 1
}

// abilityDDL creates the four tables.
var abilityDDL = []string{
	`CREATE TABLE client_app (
  id BIGINT NOT NULL PRIMARY KEY,
  app_key VARCHAR(64) NOT NULL,
  name VARCHAR(128) NOT NULL,
  status TINYINT NOT NULL DEFAULT 1,
  created_at DATETIME NOT NULL,
  UNIQUE KEY uk_app_key (app_key)
) ENGINE=InnoDB`,
	`CREATE TABLE app_ability (
  id BIGINT NOT NULL PRIMARY KEY,
  app_id BIGINT NOT NULL,
  ability_code VARCHAR(64) NOT NULL,
  status TINYINT NOT NULL DEFAULT 1,
  KEY idx_app_id (app_id)
) ENGINE=InnoDB`,
	`CREATE TABLE conf_attr (
  id INT NOT NULL PRIMARY KEY,
  attrcode VARCHAR(64) NOT NULL,
  name VARCHAR(128) NOT NULL,
  default_value VARCHAR(255) NOT NULL DEFAULT '',
  UNIQUE KEY uk_attrcode (attrcode)
) ENGINE=InnoDB`,
	`CREATE TABLE ability_attr (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  pkid BIGINT NOT NULL,
  attrcode VARCHAR(64) NOT NULL,
  attrvalue VARCHAR(255) NOT NULL,
  updated_at DATETIME NOT NULL,
  KEY idx_pkid_attrcode (pkid, attrcode)
) ENGINE=InnoDB`,
}

// abilityTables are the tables, in drop order.
const abilityTables = "ability_attr, conf_attr, app_ability, client_app"

// PrepareAbilityAttr (re)creates and loads the ability_attr tables in db's
// database at scale (1: 200k client_app, 300k app_ability, 1.2M
// ability_attr, 10k conf_attr rows), with multi-row INSERTs over several
// connections in parallel.
func PrepareAbilityAttr(ctx context.Context, db *sql.DB, scale float64) error {
	z := sizesAt(scale)
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+abilityTables); err != nil {
		return fmt.Errorf("bench: prepare ability_attr: %w", err)
	}
	for _, q := range abilityDDL {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("bench: prepare ability_attr: %w", err)
		}
	}
	type load struct {
		table, cols string
		from, to    int // row numbers, inclusive
		row         func(b []byte, r *rand.Rand, n int) []byte
	}
	apps := func(b []byte, _ *rand.Rand, n int) []byte {
		b = strconv.AppendInt(append(b, '('), int64(n), 10)
		b = strconv.AppendInt(append(b, ",'app-"...), int64(n), 10)
		b = strconv.AppendInt(append(b, "','client app "...), int64(n), 10)
		return append(b, "',1,'2024-01-01 00:00:00')"...)
	}
	abilities := func(b []byte, _ *rand.Rand, n int) []byte {
		b = strconv.AppendInt(append(b, '('), int64(n), 10)
		b = strconv.AppendInt(append(b, ','), int64((n-1)%z.apps+1), 10)
		b = strconv.AppendInt(append(b, ",'ability-"...), int64(n), 10)
		return append(b, "',1)"...)
	}
	confs := func(b []byte, _ *rand.Rand, n int) []byte {
		b = strconv.AppendInt(append(b, '('), int64(n), 10)
		b = append(append(append(b, ",'"...), attrCode(n)...), "','attribute "...)
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, "','')"...)
	}
	attrs := func(b []byte, r *rand.Rand, n int) []byte { // n-1 = p·4 + j
		p, j := (n-1)/abilityAttrsEach+1, (n-1)%abilityAttrsEach
		b = strconv.AppendInt(append(b, '('), int64(p), 10)
		b = append(append(append(b, ",'"...), attrCode(abilityCode(z, p, j))...), "','"...)
		b = appendDigits(b, r, 3)
		return append(b, "','2024-01-01 00:00:00')"...)
	}
	loads := []load{
		{"client_app", "id, app_key, name, status, created_at", 1, z.apps, apps},
		{"app_ability", "id, app_id, ability_code, status", 1, z.abilities, abilities},
		{"conf_attr", "id, attrcode, name, default_value", 1, z.confAttrs, confs},
	}
	// ability_attr is 60 % of the rows: four parallel slices.
	total := z.abilities * abilityAttrsEach
	const parts = 4
	for i := range parts {
		from, to := total*i/parts+1, total*(i+1)/parts
		if from <= to {
			loads = append(loads, load{"ability_attr", "pkid, attrcode, attrvalue, updated_at", from, to, attrs})
		}
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, 4)
	for i, l := range loads {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			r := rand.New(rand.NewPCG(uint64(i), 0xab1))
			prefix := "INSERT INTO " + l.table + " (" + l.cols + ") VALUES "
			var buf []byte
			for start := l.from; start <= l.to; start += insertBatch {
				buf = append(buf[:0], prefix...)
				for n := start; n < start+insertBatch && n <= l.to; n++ {
					if n > start {
						buf = append(buf, ',')
					}
					buf = l.row(buf, r, n)
				}
				if _, err := db.ExecContext(ctx, string(buf)); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("bench: load %s: %w", l.table, err)
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// CleanupAbilityAttr drops the ability_attr tables.
func CleanupAbilityAttr(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+abilityTables); err != nil {
		return fmt.Errorf("bench: cleanup: %w", err)
	}
	return nil
}

// abilityWorkload runs the report's lookup.
type abilityWorkload struct {
	schema Schema
	z      abilitySizes
	codes  [][]byte // codes[n-1] is conf_attr row n's code; shared, read-only
	stmt   string
}

func newAbilityWorkload(s Schema) (Workload, error) {
	if err := s.validateCommon(); err != nil {
		return nil, err
	}
	w := &abilityWorkload{schema: s, z: sizesAt(s.Scale),
		stmt: "SELECT attrvalue FROM ability_attr WHERE pkid=? AND attrcode=?"}
	w.codes = make([][]byte, w.z.confAttrs)
	for i := range w.codes {
		w.codes[i] = []byte(attrCode(i + 1))
	}
	return w, nil
}

// Name implements Workload.
func (w *abilityWorkload) Name() string { return AbilityAttr }

// Options implements Workload.
func (w *abilityWorkload) Options() Schema { return w.schema }

// NewClient implements Workload.
func (w *abilityWorkload) NewClient(seed uint64) Client {
	return &abilityClient{w: w, r: rand.New(rand.NewPCG(seed, 0xab1)), st: newStmt(w.stmt)}
}

type abilityClient struct {
	w  *abilityWorkload
	r  *rand.Rand
	st *sqlStmt
}

// Tx implements Client: one lookup of an existing (pkid, attrcode) pair.
func (c *abilityClient) Tx(s *Session) error {
	p := c.w.schema.Dist.pick(c.r, c.w.z.abilities)
	code := abilityCode(c.w.z, p, c.r.IntN(abilityAttrsEach))
	return s.run(c.st, intArg(p), bytesArg(c.w.codes[code-1]))
}
