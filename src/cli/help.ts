// Help texts of the `sluice` command and its subcommands.

export const DEFAULT_SERVER_URL = 'http://127.0.0.1:43971';
export const DEFAULT_DATA_DIR = '.data';

export const USAGE = `sluice — IPTV/OTT streaming server driven by configuration as code

Usage:
  sluice serve [--config FILE | --git URL [--branch B] [--path P] [--poll SEC]] [--data-dir DIR]
               [--port N] [--epg-port N] [--node NAME]
  sluice reconcile --plan [--config FILE | --git URL …] [--server URL] [--json] [--data-dir DIR] [--out PLANFILE] [--node NAME]
  sluice reconcile --apply PLANFILE [--server URL]
  sluice validate FILE
  sluice fmt [--check] FILE
  sluice help COMMAND | sluice COMMAND --help

Exit codes: 0 success (reconcile: no changes), 2 reconcile found changes, 1 error.`;

export const HELP: Record<string, string> = {
  serve: `Usage: sluice serve [--config FILE | --git URL [--branch B] [--path P] [--poll SEC]] [--data-dir DIR]
                    [--port N] [--epg-port N] [--node NAME]

Run the server. The desired state comes from one source:
  --config FILE   a JSON config file, watched for changes (created on the first API edit
                  when it does not exist; without --config the server starts empty)
  --git URL       a git repository, cloned into the data dir and polled
    --branch B    branch to follow (default main)
    --path P      config file inside the repository (default config.json)
    --poll SEC    seconds between fetches (default 30)
  --data-dir DIR  the server's own state: last applied config, git clone, archive
                  indexes (default ${DEFAULT_DATA_DIR})
  --log-level L   trace, debug, info, warn, error, silent (default info; env SLUICE_LOG_LEVEL)
  --port N        listen for the admin API and OTT on port N for this run, instead of the
                  config's http-server.port (default 43971); the config is not changed
  --epg-port N    the EPG server's HTTP port for this run, instead of epg-server.port
                  (default 10444)
  --node NAME     this server's node in a fleet (env SLUICE_NODE; default cluster.node-name,
                  else the host name): with cluster.nodes in the config it runs only the
                  streams, groups, storages and adapters placed on NAME (docs/fleet.md)

When a port is taken, start-up says which one and which setting or flag moves it; the
server keeps retrying it meanwhile.

Edits through the admin API are written back to the source (file: atomic write;
git: a commit pushed to URL). SIGINT or SIGTERM stops everything cleanly.`,

  reconcile: `Usage: sluice reconcile --plan [--config FILE | --git URL [--branch B] [--path P]] [--server URL] [--json] [--data-dir DIR] [--out PLANFILE] [--node NAME]
       sluice reconcile --apply PLANFILE [--server URL]

Show what the server would do to reach the desired config, without doing it; or apply a
plan saved before, exactly as it was shown.
  --plan          compute and print the plan
  --config FILE   the desired config file
  --git URL       read the desired config from the head of a git branch
    --branch B    (default main)   --path P   (default config.json)
  --server URL    running server to compare against (default $SLUICE_SERVER or
                  ${DEFAULT_SERVER_URL}); when none answers at the default address, the
                  last applied state in the data dir is used
  --data-dir DIR  (default ${DEFAULT_DATA_DIR})
  --json          print the plan as JSON
  --node NAME     a fleet node's share (docs/fleet.md): against a server, it must be that
                  server's node; without one, the data dir's applied state is that node's
  --out PLANFILE  also save the plan, the desired config and the ETag of the running
                  config it was made against (needs a running server; the file is
                  written owner-only, mode 0600: it holds the config's secrets)
  --apply PLANFILE  apply a saved plan through the server's API (PUT /config with
                  If-Match); refused, with nothing applied, when the running config
                  changed since the plan was made (default server: the plan's own)

Exit codes: --plan: 0 no changes, 2 changes, 1 invalid config or error (every error is
printed with its JSON pointer and line:column); --apply: 0 applied, 1 refused or error.`,

  validate: `Usage: sluice validate FILE

Check a config file: syntax, schema, references, uniqueness. Prints every error and
warning as FILE:line:column: severity [rule] /json/pointer: message.
Exit codes: 0 valid (warnings allowed), 1 errors.`,

  fmt: `Usage: sluice fmt [--check] FILE

Rewrite a config file in its minimal form: defaults removed, stable member order,
written atomically. An invalid file is left untouched (exit 1).
  --check   only report whether the file is in minimal form (exit 1 when it is not)`,
};
