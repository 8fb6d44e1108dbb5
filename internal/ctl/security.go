package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weftsearch/weft/security/auth"
)

// Users returns GET /_security/user: every user by name, without
// password hashes.
func (c *Client) Users(ctx context.Context) (map[string]auth.UserView, []byte, error) {
	var users map[string]auth.UserView
	raw, err := c.getRaw(ctx, "/_security/user", nil, &users)
	return users, raw, err
}

// User returns GET /_security/user/{name}. A user that does not exist is
// an *APIError with status 404 that says so.
func (c *Client) User(ctx context.Context, name string) (map[string]auth.UserView, []byte, error) {
	var users map[string]auth.UserView
	raw, err := c.getRaw(ctx, "/_security/user/"+url.PathEscape(name), nil, &users)
	return users, raw, notFound(err, "user", name)
}

// UserRequest is the body of PUT /_security/user/{name}.
type UserRequest struct {
	// Password is the user's new password; empty keeps an existing
	// user's (a new user needs one).
	Password auth.Secret
	Roles    []string
	FullName string
	Email    string
}

// PutUser creates user name, or replaces an existing user's roles, full
// name and email (and password, when req has one). created is false when
// the user existed.
func (c *Client) PutUser(ctx context.Context, name string, req UserRequest) (created bool, err error) {
	roles := req.Roles
	if roles == nil {
		roles = []string{} // "roles": null is not a list
	}
	body := map[string]any{"roles": roles}
	if req.Password != "" {
		body["password"] = req.Password.Reveal() // auth.Secret marshals redacted
	}
	if req.FullName != "" {
		body["full_name"] = req.FullName
	}
	if req.Email != "" {
		body["email"] = req.Email
	}
	var r struct {
		Created bool `json:"created"`
	}
	err = c.sendJSON(ctx, http.MethodPut, "/_security/user/"+url.PathEscape(name), body, &r)
	return r.Created, err
}

// SetPassword sets user name's password.
func (c *Client) SetPassword(ctx context.Context, name string, password auth.Secret) error {
	body := map[string]string{"password": password.Reveal()}
	err := c.sendJSON(ctx, http.MethodPost, "/_security/user/"+url.PathEscape(name)+"/_password", body, nil)
	return notFound(err, "user", name)
}

// SetUserEnabled enables or disables user name.
func (c *Client) SetUserEnabled(ctx context.Context, name string, enabled bool) error {
	op := "/_disable"
	if enabled {
		op = "/_enable"
	}
	_, err := c.Do(ctx, http.MethodPost, "/_security/user/"+url.PathEscape(name)+op, nil, nil, "")
	return notFound(err, "user", name)
}

// DeleteUser deletes user name; one that does not exist is a 404
// *APIError.
func (c *Client) DeleteUser(ctx context.Context, name string) error {
	_, err := c.Do(ctx, http.MethodDelete, "/_security/user/"+url.PathEscape(name), nil, nil, "")
	return notFound(err, "user", name)
}

// Roles returns GET /_security/role: the stored and the built-in roles
// (built-in ones have metadata._reserved).
func (c *Client) Roles(ctx context.Context) (map[string]auth.Role, []byte, error) {
	var roles map[string]auth.Role
	raw, err := c.getRaw(ctx, "/_security/role", nil, &roles)
	return roles, raw, err
}

// Role returns GET /_security/role/{name}.
func (c *Client) Role(ctx context.Context, name string) (map[string]auth.Role, []byte, error) {
	var roles map[string]auth.Role
	raw, err := c.getRaw(ctx, "/_security/role/"+url.PathEscape(name), nil, &roles)
	return roles, raw, notFound(err, "role", name)
}

// PutRole creates or replaces role name with body, a role descriptor
// ({"cluster":[..],"indices":[{"names":[..],"privileges":[..]}]}).
func (c *Client) PutRole(ctx context.Context, name string, body []byte) (created bool, err error) {
	path := "/_security/role/" + url.PathEscape(name)
	data, err := c.Do(ctx, http.MethodPut, path, nil, body, "application/json")
	if err != nil {
		return false, err
	}
	var r struct {
		Role struct {
			Created bool `json:"created"`
		} `json:"role"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return false, fmt.Errorf("PUT %s: decode response: %w", path, err)
	}
	return r.Role.Created, nil
}

// DeleteRole deletes role name; one that does not exist is a 404
// *APIError.
func (c *Client) DeleteRole(ctx context.Context, name string) error {
	_, err := c.Do(ctx, http.MethodDelete, "/_security/role/"+url.PathEscape(name), nil, nil, "")
	return notFound(err, "role", name)
}

// sendJSON sends v as a JSON body and decodes a 2xx answer into out (nil
// to ignore it).
func (c *Client) sendJSON(ctx context.Context, method, path string, v, out any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s %s: encode body: %w", method, path, err)
	}
	data, err := c.Do(ctx, method, path, nil, body, "application/json")
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}

// notFound gives a 404 from the security API (whose bodies are {} or
// {"found":false}) a reason naming what was not found.
func notFound(err error, kind, name string) error {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Type == "" {
		ae.Reason = fmt.Sprintf("%s [%s] does not exist", kind, name)
	}
	return err
}

func usersCommand(g *globals, stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "users",
		Short: "List, show, create, delete, enable and disable users; set passwords",
		Long: "Manage the users of the native realm (needs the manage_security privilege, e.g. the\n" +
			"elastic user). A password is never taken as a flag value, since a command line is visible\n" +
			"to other users of the machine: it comes from --password-stdin, --password-file or a prompt.",
		RunE: func(_ *cobra.Command, args []string) error {
			return usagef("users wants a subcommand: list, get, create, delete, password, enable or disable (got %q)", args)
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List every user: roles, enabled, full name, email",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd.Context(), g, stdio.Stdout, (*Client).Users, printUsers)
		},
	}
	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show one user",
		Args:  exactArgs(1, "the user NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fetch := func(c *Client, ctx context.Context) (map[string]auth.UserView, []byte, error) {
				return c.User(ctx, args[0])
			}
			return show(cmd.Context(), g, stdio.Stdout, fetch, printUsers)
		},
	}
	var req UserRequest
	var pwStdin bool
	var pwFile string
	create := &cobra.Command{
		Use:   "create NAME --roles r1,r2 [--password-stdin | --password-file FILE]",
		Short: "Create a user, or replace an existing user's roles, full name and email",
		Long: "Create user NAME with --roles. The password is read from standard input (--password-stdin)\n" +
			"or a file (--password-file), its line ending dropped; a new user needs one, an existing user\n" +
			"given none keeps its own. An existing user's roles, full name and email are replaced.",
		Args: exactArgs(1, "the user NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := refusePasswordFlag(cmd, g, name, pwStdin, pwFile); err != nil {
				return err
			}
			if err := auth.ValidateUsername(name); err != nil {
				return usageError{err}
			}
			pw, _, err := newPassword(stdio, pwStdin, pwFile)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			r := req
			r.Password = pw
			created, err := c.PutUser(cmd.Context(), name, r)
			if err != nil {
				return err
			}
			verb := "updated"
			if created {
				verb = "created"
			}
			_, err = fmt.Fprintf(stdio.Stdout, "%s user %s (roles: %s)\n", verb, name, dash(strings.Join(r.Roles, ", ")))
			return err
		},
	}
	create.Flags().StringSliceVar(&req.Roles, "roles", nil, "the user's roles, comma-separated (e.g. viewer or superuser)")
	create.Flags().StringVar(&req.FullName, "full-name", "", "the user's full name")
	create.Flags().StringVar(&req.Email, "email", "", "the user's email address")
	create.Flags().BoolVar(&pwStdin, "password-stdin", false, "read the user's password from standard input")
	create.Flags().StringVar(&pwFile, "password-file", "", "read the user's password from this file")

	var pwStdin2 bool
	var pwFile2 string
	password := &cobra.Command{
		Use:   "password NAME [--password-stdin | --password-file FILE]",
		Short: "Set a user's password (from standard input, a file, or a prompt on a terminal)",
		Args:  exactArgs(1, "the user NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := refusePasswordFlag(cmd, g, name, pwStdin2, pwFile2); err != nil {
				return err
			}
			pw, ok, err := newPassword(stdio, pwStdin2, pwFile2)
			if err != nil {
				return err
			}
			c, err := g.client() // before the prompt below: it may ask for --user's password first
			if err != nil {
				return err
			}
			if !ok {
				if pw, err = promptNewPassword(stdio, name); err != nil {
					return err
				}
			}
			if err := c.SetPassword(cmd.Context(), name, pw); err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdio.Stdout, "changed the password of user %s\n", name)
			return err
		},
	}
	password.Flags().BoolVar(&pwStdin2, "password-stdin", false, "read the new password from standard input")
	password.Flags().StringVar(&pwFile2, "password-file", "", "read the new password from this file")

	cmd.AddCommand(list, get, create, password,
		userAction(g, stdio, "delete", "Delete a user", "deleted", (*Client).DeleteUser),
		userAction(g, stdio, "enable", "Let a disabled user authenticate again", "enabled",
			func(c *Client, ctx context.Context, name string) error { return c.SetUserEnabled(ctx, name, true) }),
		userAction(g, stdio, "disable", "Refuse a user's authentication until it is enabled again", "disabled",
			func(c *Client, ctx context.Context, name string) error { return c.SetUserEnabled(ctx, name, false) }))
	return cmd
}

// userAction is a users subcommand that takes NAME, calls do and says what
// it did.
func userAction(g *globals, stdio IO, use, short, done string, do func(*Client, context.Context, string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use + " NAME",
		Short: short,
		Args:  exactArgs(1, "the user NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := do(c, cmd.Context(), args[0]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdio.Stdout, "%s user %s\n", done, args[0])
			return err
		},
	}
}

// refusePasswordFlag catches `users create bob --password x`: the global
// --password is the password of --user, who runs the command, never the
// new one; given without a new-password source it is most likely meant as
// the new one.
func refusePasswordFlag(cmd *cobra.Command, g *globals, name string, fromStdin bool, file string) error {
	if !cmd.Flags().Changed("password") || fromStdin || file != "" {
		return nil
	}
	return usagef("--password is the password of --user, who runs the command; user %s's new password comes from --password-stdin or --password-file (never a flag value: a command line is visible to other users)", name)
}

// promptNewPassword asks for user name's new password twice on a terminal.
func promptNewPassword(stdio IO, name string) (auth.Secret, error) {
	pw, err := promptPassword(stdio, fmt.Sprintf("New password for user %s: ", name))
	if errors.Is(err, errNoTerminal) {
		return "", usagef("give user %s's new password with --password-stdin or --password-file (standard input is not a terminal to ask on)", name)
	}
	if err != nil {
		return "", err
	}
	if err := auth.ValidatePassword(pw.Reveal()); err != nil {
		return "", usageError{err}
	}
	again, err := promptPassword(stdio, "Again: ")
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", usagef("the two passwords differ; nothing changed")
	}
	return pw, nil
}

func printUsers(w io.Writer, users map[string]auth.UserView) error {
	names := make([]string, 0, len(users))
	for n := range users {
		names = append(names, n)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tROLES\tENABLED\tFULL NAME\tEMAIL")
	for _, n := range names {
		u := users[n]
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\n", n, dash(strings.Join(u.Roles, ",")), u.Enabled, dash(deref(u.FullName)), dash(deref(u.Email)))
	}
	return tw.Flush()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func rolesCommand(g *globals, stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "roles",
		Short: "List, show, create or replace, and delete roles",
		Long: "Manage roles (needs the manage_security privilege). The built-in roles superuser, viewer\n" +
			"and monitoring_user are listed and cannot be changed.",
		RunE: func(_ *cobra.Command, args []string) error {
			return usagef("roles wants a subcommand: list, get, put or delete (got %q)", args)
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List every role: cluster privileges, index privileges, built-in",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd.Context(), g, stdio.Stdout, (*Client).Roles, printRoles)
		},
	}
	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show one role",
		Args:  exactArgs(1, "the role NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fetch := func(c *Client, ctx context.Context) (map[string]auth.Role, []byte, error) {
				return c.Role(ctx, args[0])
			}
			return show(cmd.Context(), g, stdio.Stdout, fetch, printRoles)
		},
	}
	var file string
	var indexPrivs, cluster []string
	put := &cobra.Command{
		Use:   "put NAME (--file role.json | --index-privileges NAMES:PRIVILEGES... [--cluster PRIVILEGES])",
		Short: "Create or replace a role",
		Long: "Create or replace role NAME, from a role descriptor in --file\n" +
			"({\"cluster\":[..],\"indices\":[{\"names\":[..],\"privileges\":[..]}]}), or from flags:\n" +
			"--index-privileges 'logs-*,metrics-*:read,view_index_metadata' (index names, ':' and\n" +
			"privileges, each comma-separated; split at the first ':'; repeat for more entries) and\n" +
			"--cluster monitor,manage_own_api_key. Names holding ':' or ',' need --file.",
		Args: exactArgs(1, "the role NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			body, err := roleBody(name, file, indexPrivs, cluster)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			created, err := c.PutRole(cmd.Context(), name, body)
			if err != nil {
				return err
			}
			verb := "updated"
			if created {
				verb = "created"
			}
			_, err = fmt.Fprintf(stdio.Stdout, "%s role %s\n", verb, name)
			return err
		},
	}
	put.Flags().StringVar(&file, "file", "", "JSON file holding the role descriptor")
	put.Flags().StringArrayVar(&indexPrivs, "index-privileges", nil, "NAMES:PRIVILEGES, e.g. 'logs-*:read,view_index_metadata' (repeatable)")
	put.Flags().StringSliceVar(&cluster, "cluster", nil, "cluster privileges, comma-separated (e.g. monitor)")
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a role",
		Args:  exactArgs(1, "the role NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := c.DeleteRole(cmd.Context(), args[0]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdio.Stdout, "deleted role %s\n", args[0])
			return err
		},
	}
	cmd.AddCommand(list, get, put, del)
	return cmd
}

// roleBody builds the PUT role body from --file or from the privilege
// flags, and checks it as the node will (auth.ParseRole), so a mistake is
// a usage error naming the flag or file.
func roleBody(name, file string, indexPrivs, cluster []string) ([]byte, error) {
	if err := auth.ValidateRoleName(name); err != nil {
		return nil, usageError{err}
	}
	var body []byte
	switch {
	case file != "" && (len(indexPrivs) > 0 || len(cluster) > 0):
		return nil, usagef("--file and --index-privileges/--cluster are both given; use one")
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, usageError{fmt.Errorf("--file: %w", err)}
		}
		body = data
	case len(indexPrivs) == 0 && len(cluster) == 0:
		return nil, usagef("role %s: give --file, or --index-privileges and/or --cluster", name)
	default:
		role := auth.Role{Cluster: cluster, Indices: []auth.IndexPrivileges{}}
		if role.Cluster == nil {
			role.Cluster = []string{}
		}
		for _, ip := range indexPrivs {
			names, privs, ok := strings.Cut(ip, ":")
			entry := auth.IndexPrivileges{Names: splitList(names), Privileges: splitList(privs)}
			if !ok || len(entry.Names) == 0 || len(entry.Privileges) == 0 {
				return nil, usagef("--index-privileges %q is not NAMES:PRIVILEGES (e.g. 'logs-*:read,view_index_metadata')", ip)
			}
			role.Indices = append(role.Indices, entry)
		}
		var err error
		if body, err = json.Marshal(role); err != nil {
			return nil, err
		}
	}
	if _, err := auth.ParseRole(name, body); err != nil {
		src := "the flags"
		if file != "" {
			src = "--file " + file
		}
		return nil, usageError{fmt.Errorf("%s: %w", src, err)}
	}
	return body, nil
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func printRoles(w io.Writer, roles map[string]auth.Role) error {
	names := make([]string, 0, len(roles))
	for n := range roles {
		names = append(names, n)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tCLUSTER\tINDICES\tBUILT-IN")
	for _, n := range names {
		r := roles[n]
		var idx []string
		for _, ip := range r.Indices {
			idx = append(idx, strings.Join(ip.Names, ",")+":"+strings.Join(ip.Privileges, ","))
		}
		reserved, _ := r.Metadata["_reserved"].(bool)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\n", n, dash(strings.Join(r.Cluster, ",")), dash(strings.Join(idx, " ")), reserved)
	}
	return tw.Flush()
}
