package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/filemill/filemill/domain"
)

const adminUsage = `Usage:
  filemill admin bootstrap --org NAME --project NAME [--credits N] [--json]
  filemill admin keys create --org ORG --project PRJ [--env live|test] [--name N] [--scopes a,b]
                             [--ip-allow CIDR,…] [--spend-limit N] [--allowed-operations a,b]
                             [--allowed-projects prj_…,…] [--expires-in 720h | --expires-at RFC3339]
                             [--rate-limit N] [--json]
  filemill admin keys list --org ORG [--project PRJ] [--json]
  filemill admin keys revoke KEY_ID
  filemill admin credits grant --org ORG --amount N [--env live|test] [--json]
  filemill admin org suspend|resume ORG
  filemill admin projects create --org ORG --name NAME [--json]
  filemill admin projects update --project PRJ --concurrency-limit N

ORG is an organization id (org_…) or name; PRJ a project id (prj_…) or name within ORG.
Admin commands use the same configuration as 'serve' (the same data directory or database),
and work while it runs.`

// adminCmd is one admin command: its flags and what it does with the services.
type adminCmd struct {
	fs  *flag.FlagSet
	rc  *rawConfig
	pos []string
}

func newAdminCmd(name string) *adminCmd {
	c := &adminCmd{fs: flag.NewFlagSet("admin "+name, flag.ContinueOnError)}
	c.rc = registerConfigFlags(c.fs)
	c.fs.Usage = func() { fmt.Fprintln(os.Stderr, adminUsage) }
	return c
}

// parse reads positional arguments given before the flags (admin org suspend ORG
// --data-dir x) and after them.
func (c *adminCmd) parse(args []string) error {
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		c.pos = append(c.pos, args[0])
		args = args[1:]
	}
	if err := c.fs.Parse(args); err != nil {
		return usageError(err.Error() + "\n" + adminUsage)
	}
	c.pos = append(c.pos, c.fs.Args()...)
	return nil
}

// open parses args, refuses them when problem (if given) names one, and opens the
// services on the configuration's store; call the returned func when done.
func (c *adminCmd) open(ctx context.Context, args []string, problem func() string) (*domain.Services, func(), error) {
	if err := c.parse(args); err != nil {
		return nil, nil, err
	}
	if problem != nil {
		if msg := problem(); msg != "" {
			return nil, nil, usageError(msg + "\n" + adminUsage)
		}
	}
	cfg, err := loadConfig(c.rc)
	if err != nil {
		return nil, nil, err
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return domain.NewServices(cfg.Domain, domain.Deps{Store: store}), func() { store.Close() }, nil
}

// need is an open check naming the first of the flags left empty.
func (c *adminCmd) need(names ...string) func() string {
	return func() string {
		for _, name := range names {
			if c.fs.Lookup(name).Value.String() == "" {
				return "--" + name + " is required"
			}
		}
		return ""
	}
}

// onePositional is an open check wanting exactly one positional argument.
func (c *adminCmd) onePositional(what string) func() string {
	return func() string {
		if len(c.pos) != 1 {
			return "give exactly one " + what
		}
		return ""
	}
}

func runAdmin(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError(adminUsage)
	}
	cmd, rest := args[0], args[1:]
	if (cmd == "keys" || cmd == "credits" || cmd == "org" || cmd == "projects") && len(rest) > 0 {
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	switch cmd {
	case "bootstrap":
		return adminBootstrap(ctx, rest)
	case "keys create":
		return adminKeysCreate(ctx, rest)
	case "keys list":
		return adminKeysList(ctx, rest)
	case "keys revoke":
		return adminKeysRevoke(ctx, rest)
	case "credits grant":
		return adminCreditsGrant(ctx, rest)
	case "org suspend", "org resume":
		return adminOrgStatus(ctx, rest, cmd == "org suspend")
	case "projects create":
		return adminProjectsCreate(ctx, rest)
	case "projects update":
		return adminProjectsUpdate(ctx, rest)
	}
	return usageError("unknown admin command " + cmd + "\n" + adminUsage)
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func adminBootstrap(ctx context.Context, args []string) error {
	c := newAdminCmd("bootstrap")
	org := c.fs.String("org", "", "organization name")
	prj := c.fs.String("project", "", "project name")
	credits := c.fs.Int64("credits", 0, "credits to grant to the live and the test account")
	asJSON := c.fs.Bool("json", false, "print JSON")
	svc, done, err := c.open(ctx, args, c.need("org", "project"))
	if err != nil {
		return err
	}
	defer done()
	b, err := svc.Organizations.Bootstrap(ctx, *org, *prj, *credits)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(bootstrapJSON(b))
	}
	fmt.Printf("organization %s (%s)\nproject      %s (%s)\nlive key     %s\ntest key     %s\n",
		b.Organization.ID, b.Organization.Name, b.Project.ID, b.Project.Name, b.LiveSecret, b.TestSecret)
	return nil
}

// resolveProject finds a project by id, or by name within an organization.
func resolveProject(ctx context.Context, svc *domain.Services, orgRef, prjRef string) (*domain.Organization, *domain.Project, error) {
	var org *domain.Organization
	var err error
	if orgRef != "" {
		if org, err = svc.Organizations.FindOrganization(ctx, orgRef); err != nil {
			return nil, nil, err
		}
	}
	if prjRef == "" {
		return org, nil, nil
	}
	var prj *domain.Project
	if domain.ValidID(domain.PrefixProject, prjRef) {
		prj, err = svc.Store.FindProjectByID(ctx, prjRef)
	} else if org != nil {
		prj, err = svc.Store.FindProjectByName(ctx, org.ID, prjRef)
	} else {
		return nil, nil, usageError("a project name needs --org")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("project %s: %w", prjRef, err)
	}
	if org != nil && prj.OrganizationID != org.ID {
		return nil, nil, fmt.Errorf("project %s is not in organization %s", prjRef, orgRef)
	}
	if org == nil {
		if org, err = svc.Store.FindOrganizationByID(ctx, prj.OrganizationID); err != nil {
			return nil, nil, err
		}
	}
	return org, prj, nil
}

type keyJSON struct {
	*domain.APIKey
	Secret string `json:"api_key,omitempty"`
}

func adminKeysCreate(ctx context.Context, args []string) error {
	c := newAdminCmd("keys create")
	orgRef := c.fs.String("org", "", "organization id or name")
	prjRef := c.fs.String("project", "", "project id or name (the key's default project)")
	env := c.fs.String("env", "live", "live or test")
	name := c.fs.String("name", "", "a label")
	scopes := c.fs.String("scopes", "", "comma-separated scopes (default: all) — "+strings.Join(domain.AllScopes, ","))
	ipAllow := c.fs.String("ip-allow", "", "comma-separated CIDRs the key may be used from")
	spend := c.fs.Int64("spend-limit", 0, "credits the key may spend per calendar month (0: no limit)")
	ops := c.fs.String("allowed-operations", "", "comma-separated operations/presets the key may run (default: all)")
	prjs := c.fs.String("allowed-projects", "", "comma-separated project ids the key may act on (default: all of the organization)")
	expiresIn := c.fs.Duration("expires-in", 0, "lifetime, e.g. 720h")
	expiresAt := c.fs.String("expires-at", "", "expiry as RFC 3339")
	rate := c.fs.Int("rate-limit", 0, "requests per minute (0: the deployment default)")
	asJSON := c.fs.Bool("json", false, "print JSON")
	svc, done, err := c.open(ctx, args, c.need("project"))
	if err != nil {
		return err
	}
	defer done()
	org, prj, err := resolveProject(ctx, svc, *orgRef, *prjRef)
	if err != nil {
		return err
	}
	nk := domain.NewKey{OrganizationID: org.ID, ProjectID: prj.ID, Environment: domain.Environment(*env), Name: *name,
		Scopes: splitList(*scopes), IPAllowList: splitList(*ipAllow), SpendLimit: *spend,
		AllowedOperations: splitList(*ops), AllowedProjects: splitList(*prjs), RateLimit: *rate}
	switch {
	case *expiresIn > 0 && *expiresAt != "":
		return usageError("give --expires-in or --expires-at, not both")
	case *expiresIn > 0:
		t := time.Now().UTC().Add(*expiresIn)
		nk.ExpiresAt = &t
	case *expiresAt != "":
		t, err := time.Parse(time.RFC3339, *expiresAt)
		if err != nil {
			return usageError("--expires-at: " + err.Error())
		}
		t = t.UTC()
		nk.ExpiresAt = &t
	}
	key, secret, err := svc.Keys.CreateKey(ctx, nk)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(keyJSON{APIKey: key, Secret: secret})
	}
	fmt.Printf("key %s created for project %s (%s)\nsecret (shown once): %s\n", key.ID, prj.ID, key.Environment, secret)
	return nil
}

func adminKeysList(ctx context.Context, args []string) error {
	c := newAdminCmd("keys list")
	orgRef := c.fs.String("org", "", "organization id or name")
	prjRef := c.fs.String("project", "", "project id or name")
	asJSON := c.fs.Bool("json", false, "print JSON")
	svc, done, err := c.open(ctx, args, c.need("org"))
	if err != nil {
		return err
	}
	defer done()
	org, prj, err := resolveProject(ctx, svc, *orgRef, *prjRef)
	if err != nil {
		return err
	}
	f := domain.APIKeyFilter{OrganizationID: org.ID}
	if prj != nil {
		f.ProjectID = prj.ID
	}
	keys, err := svc.Keys.ListKeys(ctx, f)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(keys)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROJECT\tENV\tHINT\tNAME\tSTATE")
	for _, k := range keys {
		state := "active"
		if k.RevokedAt != nil {
			state = "revoked"
		} else if k.ExpiresAt != nil && time.Now().After(*k.ExpiresAt) {
			state = "expired"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\n", k.ID, k.ProjectID, k.Environment, k.Hint, k.Name, state)
	}
	return tw.Flush()
}

func adminKeysRevoke(ctx context.Context, args []string) error {
	c := newAdminCmd("keys revoke")
	svc, done, err := c.open(ctx, args, c.onePositional("key id"))
	if err != nil {
		return err
	}
	defer done()
	if err := svc.Keys.RevokeKey(ctx, c.pos[0]); err != nil {
		return err
	}
	fmt.Printf("key %s revoked\n", c.pos[0])
	return nil
}

func adminCreditsGrant(ctx context.Context, args []string) error {
	c := newAdminCmd("credits grant")
	orgRef := c.fs.String("org", "", "organization id or name")
	amount := c.fs.Int64("amount", 0, "credits to add")
	env := c.fs.String("env", "live", "live or test")
	asJSON := c.fs.Bool("json", false, "print JSON")
	svc, done, err := c.open(ctx, args, func() string {
		if *orgRef == "" || *amount <= 0 {
			return "--org and a positive --amount are required"
		}
		return ""
	})
	if err != nil {
		return err
	}
	defer done()
	org, err := svc.Organizations.FindOrganization(ctx, *orgRef)
	if err != nil {
		return err
	}
	acct, err := svc.Credits.Grant(ctx, org.ID, domain.Environment(*env), *amount, "admin grant")
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(acct)
	}
	fmt.Printf("granted %d credits to %s (%s): balance %d, reserved %d, used %d\n", *amount, org.ID, acct.Environment, acct.Balance, acct.Reserved, acct.Used)
	return nil
}

func adminOrgStatus(ctx context.Context, args []string, suspend bool) error {
	c := newAdminCmd("org")
	svc, done, err := c.open(ctx, args, c.onePositional("organization"))
	if err != nil {
		return err
	}
	defer done()
	org, err := svc.Organizations.SetSuspended(ctx, c.pos[0], suspend)
	if err != nil {
		return err
	}
	fmt.Printf("organization %s (%s) is %s\n", org.ID, org.Name, org.Status)
	return nil
}

func adminProjectsCreate(ctx context.Context, args []string) error {
	c := newAdminCmd("projects create")
	orgRef := c.fs.String("org", "", "organization id or name")
	name := c.fs.String("name", "", "project name")
	asJSON := c.fs.Bool("json", false, "print JSON")
	svc, done, err := c.open(ctx, args, c.need("org", "name"))
	if err != nil {
		return err
	}
	defer done()
	org, err := svc.Organizations.FindOrganization(ctx, *orgRef)
	if err != nil {
		return err
	}
	prj, err := svc.Organizations.CreateProject(ctx, org.ID, *name)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(prj)
	}
	fmt.Printf("project %s (%s) in %s\n", prj.ID, prj.Name, org.ID)
	return nil
}

func adminProjectsUpdate(ctx context.Context, args []string) error {
	c := newAdminCmd("projects update")
	orgRef := c.fs.String("org", "", "organization id or name (to find a project by name)")
	prjRef := c.fs.String("project", "", "project id or name")
	limit := c.fs.Int("concurrency-limit", -1, "queued+running jobs allowed (0: the deployment default)")
	svc, done, err := c.open(ctx, args, func() string {
		if *prjRef == "" || *limit < 0 {
			return "--project and --concurrency-limit are required"
		}
		return ""
	})
	if err != nil {
		return err
	}
	defer done()
	_, prj, err := resolveProject(ctx, svc, *orgRef, *prjRef)
	if err != nil {
		return err
	}
	if err := svc.Organizations.SetConcurrencyLimit(ctx, prj.ID, *limit); err != nil {
		return err
	}
	fmt.Printf("project %s: concurrency limit %d\n", prj.ID, *limit)
	return nil
}
