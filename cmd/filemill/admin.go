package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/filemill/filemill/domain"
)

const adminLong = `Operator commands: organizations, projects, keys, credits and the console's users.

ORG is an organization id (org_…) or name; PRJ a project id (prj_…) or name within ORG.
Admin commands use the same configuration as 'serve' (the same data directory or
database, given by the same flags and FILEMILL_* variables), and work while it runs.`

// adminCmd is one admin command: its cobra command with the configuration flags
// beside its own, and what it does with the services.
type adminCmd struct {
	cmd *cobra.Command
	rc  *rawConfig
	cfg *Config // once loaded, for the command to read (the public URL)
}

// newAdminCmd makes an admin command taking the positional arguments args allows;
// run gets the command line's positional arguments.
func newAdminCmd(use, short string, args cobra.PositionalArgs) *adminCmd {
	c := &adminCmd{cmd: &cobra.Command{Use: use, Short: short, Args: args}}
	c.rc = registerConfigFlags(c.cmd.Flags())
	return c
}

func (c *adminCmd) flags() *pflag.FlagSet { return c.cmd.Flags() }

// run sets what the command does once its problem check (if any) passes and the
// services are open on the configuration's store.
func (c *adminCmd) run(problem func() string, fn func(ctx context.Context, svc *domain.Services, args []string) error) *cobra.Command {
	c.cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if problem != nil {
			if msg := problem(); msg != "" {
				return usageError(msg + "\nRun '" + cmd.CommandPath() + " --help' for usage.")
			}
		}
		cfg, err := loadConfig(c.rc)
		if err != nil {
			return err
		}
		c.cfg = cfg
		store, err := openStore(cmd.Context(), cfg)
		if err != nil {
			return err
		}
		defer store.Close()
		return fn(cmd.Context(), domain.NewServices(cfg.Domain, domain.Deps{Store: store}), args)
	}
	return c.cmd
}

// need is a problem check naming the first of the flags left empty.
func (c *adminCmd) need(names ...string) func() string {
	return func() string {
		for _, name := range names {
			if c.flags().Lookup(name).Value.String() == "" {
				return "--" + name + " is required"
			}
		}
		return ""
	}
}

// onePositional wants exactly one positional argument.
func onePositional(what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageError("give exactly one " + what + "\nRun '" + c.CommandPath() + " --help' for usage.")
		}
		return nil
	}
}

func adminCommand() *cobra.Command {
	admin := &cobra.Command{Use: "admin", Short: "operator commands (bootstrap, keys, credits, org, projects, users)", Long: adminLong}
	keys := &cobra.Command{Use: "keys", Short: "API keys"}
	keys.AddCommand(adminKeysCreate(), adminKeysList(), adminKeysRevoke())
	credits := &cobra.Command{Use: "credits", Short: "credit balances"}
	credits.AddCommand(adminCreditsGrant())
	org := &cobra.Command{Use: "org", Short: "organizations"}
	org.AddCommand(adminOrgStatus(true), adminOrgStatus(false))
	projects := &cobra.Command{Use: "projects", Short: "projects"}
	projects.AddCommand(adminProjectsCreate(), adminProjectsUpdate())
	users := &cobra.Command{Use: "users", Short: "people who sign in to the console"}
	users.AddCommand(adminUsersCreate())
	admin.AddCommand(adminBootstrap(), keys, credits, org, projects, users)
	return admin
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

func adminBootstrap() *cobra.Command {
	c := newAdminCmd("bootstrap --org NAME --project NAME [--credits N] [--json]",
		"create or reuse an organization and project, and mint a live and a test key", noArgs)
	org := c.flags().String("org", "", "organization name")
	prj := c.flags().String("project", "", "project name")
	credits := c.flags().Int64("credits", 0, "credits to grant to the live and the test account")
	asJSON := c.flags().Bool("json", false, "print JSON")
	return c.run(c.need("org", "project"), func(ctx context.Context, svc *domain.Services, _ []string) error {
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
	})
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

func adminKeysCreate() *cobra.Command {
	c := newAdminCmd("create --org ORG --project PRJ [--env live|test] [--name N] [--scopes a,b] [--ip-allow CIDR,…] [--spend-limit N] [--allowed-operations a,b] [--allowed-projects prj_…,…] [--expires-in 720h | --expires-at RFC3339] [--rate-limit N] [--json]",
		"mint a key (its secret is shown once)", noArgs)
	fs := c.flags()
	orgRef := fs.String("org", "", "organization id or name")
	prjRef := fs.String("project", "", "project id or name (the key's default project)")
	env := fs.String("env", "live", "live or test")
	name := fs.String("name", "", "a label")
	scopes := fs.String("scopes", "", "comma-separated scopes (default: every data scope; manage and organization only when listed) — "+strings.Join(domain.AllScopes, ","))
	ipAllow := fs.String("ip-allow", "", "comma-separated CIDRs the key may be used from")
	spend := fs.Int64("spend-limit", 0, "credits the key may spend per calendar month (0: no limit)")
	ops := fs.String("allowed-operations", "", "comma-separated operations/presets the key may run (default: all)")
	prjs := fs.String("allowed-projects", "", "comma-separated project ids the key may act on (default: all of the organization)")
	expiresIn := fs.Duration("expires-in", 0, "lifetime, e.g. 720h")
	expiresAt := fs.String("expires-at", "", "expiry as RFC 3339")
	rate := fs.Int("rate-limit", 0, "requests per minute (0: the deployment default)")
	asJSON := fs.Bool("json", false, "print JSON")
	return c.run(c.need("project"), func(ctx context.Context, svc *domain.Services, _ []string) error {
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
	})
}

func adminKeysList() *cobra.Command {
	c := newAdminCmd("list --org ORG [--project PRJ] [--json]", "list the keys of an organization or project", noArgs)
	orgRef := c.flags().String("org", "", "organization id or name")
	prjRef := c.flags().String("project", "", "project id or name")
	asJSON := c.flags().Bool("json", false, "print JSON")
	return c.run(c.need("org"), func(ctx context.Context, svc *domain.Services, _ []string) error {
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
	})
}

func adminKeysRevoke() *cobra.Command {
	c := newAdminCmd("revoke KEY_ID", "revoke a key", onePositional("key id"))
	return c.run(nil, func(ctx context.Context, svc *domain.Services, args []string) error {
		if err := svc.Keys.RevokeKey(ctx, args[0]); err != nil {
			return err
		}
		fmt.Printf("key %s revoked\n", args[0])
		return nil
	})
}

func adminCreditsGrant() *cobra.Command {
	c := newAdminCmd("grant --org ORG --amount N [--env live|test] [--json]", "add credits to an organization's account", noArgs)
	orgRef := c.flags().String("org", "", "organization id or name")
	amount := c.flags().Int64("amount", 0, "credits to add")
	env := c.flags().String("env", "live", "live or test")
	asJSON := c.flags().Bool("json", false, "print JSON")
	problem := func() string {
		if *orgRef == "" || *amount <= 0 {
			return "--org and a positive --amount are required"
		}
		return ""
	}
	return c.run(problem, func(ctx context.Context, svc *domain.Services, _ []string) error {
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
	})
}

func adminOrgStatus(suspend bool) *cobra.Command {
	use, short := "resume ORG", "let a suspended organization's keys work again"
	if suspend {
		use, short = "suspend ORG", "suspend an organization: its keys get 403 organization_suspended"
	}
	c := newAdminCmd(use, short, onePositional("organization"))
	return c.run(nil, func(ctx context.Context, svc *domain.Services, args []string) error {
		org, err := svc.Organizations.SetSuspended(ctx, args[0], suspend)
		if err != nil {
			return err
		}
		fmt.Printf("organization %s (%s) is %s\n", org.ID, org.Name, org.Status)
		return nil
	})
}

func adminProjectsCreate() *cobra.Command {
	c := newAdminCmd("create --org ORG --name NAME [--json]", "create a project", noArgs)
	orgRef := c.flags().String("org", "", "organization id or name")
	name := c.flags().String("name", "", "project name")
	asJSON := c.flags().Bool("json", false, "print JSON")
	return c.run(c.need("org", "name"), func(ctx context.Context, svc *domain.Services, _ []string) error {
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
	})
}

func adminProjectsUpdate() *cobra.Command {
	c := newAdminCmd("update --project PRJ --concurrency-limit N", "change a project's concurrency limit", noArgs)
	orgRef := c.flags().String("org", "", "organization id or name (to find a project by name)")
	prjRef := c.flags().String("project", "", "project id or name")
	limit := c.flags().Int("concurrency-limit", -1, "queued+running jobs allowed (0: the deployment default)")
	problem := func() string {
		if *prjRef == "" || *limit < 0 {
			return "--project and --concurrency-limit are required"
		}
		return ""
	}
	return c.run(problem, func(ctx context.Context, svc *domain.Services, _ []string) error {
		_, prj, err := resolveProject(ctx, svc, *orgRef, *prjRef)
		if err != nil {
			return err
		}
		if err := svc.Organizations.SetConcurrencyLimit(ctx, prj.ID, *limit); err != nil {
			return err
		}
		fmt.Printf("project %s: concurrency limit %d\n", prj.ID, *limit)
		return nil
	})
}

func adminUsersCreate() *cobra.Command {
	c := newAdminCmd("create --org ORG --email E --role owner|admin|developer|viewer [--password-stdin] [--json]",
		"add a person to the console: a one-time link to set the password is printed, unless it is read from standard input", noArgs)
	fs := c.flags()
	orgRef := fs.String("org", "", "organization id or name")
	email := fs.String("email", "", "the person's email")
	role := fs.String("role", "", "owner, admin, developer or viewer")
	fromStdin := fs.Bool("password-stdin", false, "read the password from standard input (otherwise print a one-time link to set it)")
	asJSON := fs.Bool("json", false, "print JSON")
	return c.run(c.need("org", "email", "role"), func(ctx context.Context, svc *domain.Services, _ []string) error {
		org, err := svc.Organizations.FindOrganization(ctx, *orgRef)
		if err != nil {
			return err
		}
		nu := domain.NewUser{OrganizationID: org.ID, Email: *email, Role: *role}
		if *fromStdin {
			// One line, without its newline; bounded, as a password is.
			raw, err := io.ReadAll(io.LimitReader(os.Stdin, domain.MaxPasswordLength+2))
			if err != nil {
				return fmt.Errorf("read the password: %w", err)
			}
			nu.Password = strings.TrimRight(string(raw), "\r\n")
			if nu.Password == "" {
				return usageError("--password-stdin: standard input holds no password")
			}
		}
		u, err := svc.People.CreateUser(ctx, nu)
		if err != nil {
			return err
		}
		base := strings.TrimSuffix(c.cfg.PublicURL, "/")
		link := ""
		if u.PasswordToken != "" {
			link = base + domain.SetPasswordPath + u.PasswordToken
		}
		if *asJSON {
			out := map[string]string{"user_id": u.User.ID, "membership_id": u.Membership.ID, "organization_id": org.ID,
				"email": u.User.Email, "role": u.Membership.Role}
			if link != "" {
				out["set_password_url"] = link
			}
			return printJSON(out)
		}
		fmt.Printf("user %s (%s) is %s of %s (%s)\n", u.User.ID, u.User.Email, u.Membership.Role, org.ID, org.Name)
		if link != "" {
			fmt.Printf("set the password (one-time link, valid %s): %s\n", shortDuration(svc.Config.PasswordLinkTTL), link)
		} else {
			fmt.Printf("sign in at %s/console/\n", base)
		}
		return nil
	})
}

// shortDuration is d without trailing zero units: 24h, 90m.
func shortDuration(d time.Duration) string {
	out := d.String()
	for _, z := range []string{"0s", "0m"} {
		if strings.HasSuffix(out, z) && len(out) > len(z) && (strings.Contains(out, "h") || z == "0s") {
			out = strings.TrimSuffix(out, z)
		}
	}
	return out
}
