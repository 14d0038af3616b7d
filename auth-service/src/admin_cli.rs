//! The administration commands of the `chataigne-auth-service` binary
//! (`migrate`, `clients`, `keys`, `users`, `roles`, `memberships`, `consents`,
//! `sessions`): their arguments, `--data-dir` for an embedded stack, and
//! their dispatch onto the management API. Every change is read live by
//! every replica: it takes effect at the next request.

use std::io::BufRead;
use std::path::Path;

use chataigne_common::embedded::{self, DataDir};
use clap::{Subcommand, ValueEnum};
use secrecy::SecretString;

use crate::admin_oauth::NewClientRequest;
use crate::admin_users::NewUserRequest;
use crate::app::AuthApp;
use crate::config::Config;
use crate::store::oauth::ClientKind;

/// One administration command.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Apply the database migrations and exit.
    Migrate,
    /// OAuth clients and service accounts.
    #[command(subcommand)]
    Clients(ClientsCommand),
    /// Signing keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Users.
    #[command(subcommand)]
    Users(UsersCommand),
    /// Roles and the permissions they grant (the demo set exists only with
    /// `seed_demo`; production defines its own).
    #[command(subcommand)]
    Roles(RolesCommand),
    /// Memberships (users and service accounts): a role on an organization
    /// or on one of its locations.
    #[command(subcommand)]
    Memberships(MembershipsCommand),
    /// Users' consents to clients.
    #[command(subcommand)]
    Consents(ConsentsCommand),
    /// Users' sessions (their access and refresh tokens).
    #[command(subcommand)]
    Sessions(SessionsCommand),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Kind {
    Public,
    Confidential,
    Service,
}

#[derive(Debug, Subcommand)]
pub enum ClientsCommand {
    /// Register or replace a client; prints its secret once (confidential, service).
    Add {
        client_id: String,
        #[arg(long)]
        name: String,
        #[arg(long, value_enum, default_value = "public")]
        kind: Kind,
        /// Redirect URI (repeatable).
        #[arg(long = "redirect-uri")]
        redirect_uris: Vec<String>,
        /// Service accounts: allowed scopes (space-separated or repeated).
        #[arg(long = "scope")]
        scopes: Vec<String>,
    },
    /// Every client: id, kind, enabled or disabled, origin, name.
    List,
    /// Refuse the client's tokens from the next request (reversible).
    Disable {
        client_id: String,
    },
    Enable {
        client_id: String,
    },
    /// Delete the client with its consents, sessions and tokens and, for a
    /// service account, its service user and memberships.
    Remove {
        client_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Add a signing key that signs from now on; old keys keep verifying.
    Rotate,
    List,
    /// Stop accepting tokens signed with this key (at the next request, on
    /// every replica).
    Retire {
        /// A key id from `keys list`; it may start with `-`.
        #[arg(allow_hyphen_values = true)]
        kid: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Create an active user; prints `user_id=usr_…`. The password (12 to 512
    /// characters) is read from the first line of stdin with
    /// `--password-stdin`, else from CHATAIGNE_NEW_PASSWORD; without one the
    /// user cannot sign in until `set-password`.
    Add {
        #[arg(long)]
        email: String,
        #[arg(long = "name")]
        display_name: String,
        #[arg(long)]
        password_stdin: bool,
    },
    /// Every user: id, status, platform-admin or not, password set or not,
    /// e-mail, display name.
    List,
    /// active, revoked or banned; takes effect at the next request.
    SetStatus { user_id: String, status: String },
    /// Read the new password from the first line of stdin
    /// (`--password-stdin`) or from CHATAIGNE_NEW_PASSWORD.
    SetPassword {
        user_id: String,
        #[arg(long)]
        password_stdin: bool,
    },
    /// Make the user a platform admin (the admin scopes still need consent).
    GrantAdmin { user_id: String },
    /// Withdraw the user's platform-admin role.
    ClearAdmin { user_id: String },
}

#[derive(Debug, Subcommand)]
pub enum RolesCommand {
    /// Every role and permission, one `role<TAB>permission` per line.
    List,
    /// Set the permissions (scope names, space-separated or repeated) the
    /// role grants, replacing its previous ones; read at the next request.
    Set {
        role: String,
        #[arg(long = "permission")]
        permissions: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConsentsCommand {
    /// The user's consents: client id, active or revoked, scopes.
    List { user_id: String },
    /// Withdraw the user's consent to the client.
    Revoke {
        user_id: String,
        #[arg(long)]
        client: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// End the user's sessions (through one client with --client), their
    /// refresh tokens and, for all clients, the sign-in of the consent page.
    Revoke {
        user_id: String,
        #[arg(long)]
        client: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum MembershipsCommand {
    /// Give the user a role on the organization (or one of its locations
    /// with --location), replacing the role of a membership there.
    #[command(visible_alias = "grant")]
    Add {
        user_id: String,
        #[arg(long)]
        organization: String,
        #[arg(long)]
        location: Option<String>,
        #[arg(long)]
        role: String,
    },
    /// The user's memberships: organization, location (`-`: the whole
    /// organization), role.
    List { user_id: String },
    /// Remove the user's membership on the organization (or the location).
    #[command(visible_alias = "revoke")]
    Remove {
        user_id: String,
        #[arg(long)]
        organization: String,
        #[arg(long)]
        location: Option<String>,
    },
}

/// Points `config` at the embedded stack whose data directory is `dir` (the
/// launcher's `--data-dir`): its `auth.db`, which must exist, and the
/// key-encryption key its signing keys are sealed under.
pub fn use_data_dir(config: &mut Config, dir: &Path) -> anyhow::Result<()> {
    let dir = DataDir::existing(dir, embedded::AUTH_DB)?;
    config.database.url = SecretString::from(dir.sqlite_url(embedded::AUTH_DB, false));
    config.keys.encryption_key = dir.read_secret(embedded::SIGNING_KEYS_KEK);
    Ok(())
}

/// Runs `command` against the database of `config` (demo data never seeded).
pub async fn run(mut config: Config, command: AdminCommand) -> anyhow::Result<()> {
    if let AdminCommand::Migrate = command {
        // The migration Job may start before its database: wait for it.
        let database = format!(
            "database {}",
            chataigne_common::startup::redacted_url(config.database.url())
        );
        chataigne_common::startup::retry(&database, &config.startup, || {
            crate::admin_oauth::migrate(&config.database)
        })
        .await?;
        println!("migrations applied");
        return Ok(());
    }
    config.seed_demo = false;
    let app = AuthApp::build(config).await?;
    match command {
        AdminCommand::Migrate => Ok(()),
        AdminCommand::Clients(command) => clients(&app, command).await,
        AdminCommand::Keys(command) => keys(&app, command).await,
        AdminCommand::Users(command) => users(&app, command).await,
        AdminCommand::Roles(RolesCommand::List) => {
            for (role, permission) in app.role_permissions().await? {
                println!("{role}\t{permission}");
            }
            Ok(())
        }
        AdminCommand::Roles(RolesCommand::Set { role, permissions }) => {
            Ok(app.set_role_permissions(&role, &permissions).await?)
        }
        AdminCommand::Memberships(command) => memberships(&app, command).await,
        AdminCommand::Consents(command) => consents(&app, command).await,
        AdminCommand::Sessions(SessionsCommand::Revoke { user_id, client }) => {
            let ended = app
                .revoke_user_sessions(&user_id, client.as_deref())
                .await?;
            println!("sessions_ended={ended}");
            Ok(())
        }
    }
}

async fn clients(app: &AuthApp, command: ClientsCommand) -> anyhow::Result<()> {
    match command {
        ClientsCommand::Add {
            client_id,
            name,
            kind,
            redirect_uris,
            scopes,
        } => {
            let kind = match kind {
                Kind::Public => ClientKind::Public,
                Kind::Confidential => ClientKind::Confidential,
                Kind::Service => ClientKind::Service,
            };
            let registered = app
                .add_client(NewClientRequest {
                    client_id,
                    name,
                    kind,
                    redirect_uris,
                    allowed_scopes: scopes,
                })
                .await?;
            println!("client_id={}", registered.client_id);
            if let Some(user) = registered.service_user_id {
                println!("service_user_id={user}");
            }
            if let Some(secret) = registered.secret {
                println!("client_secret={secret}");
            }
        }
        ClientsCommand::List => {
            for client in app.clients().await? {
                let state = if client.enabled {
                    "enabled"
                } else {
                    "disabled"
                };
                println!(
                    "{}\t{}\t{state}\t{}\t{}",
                    client.client_id,
                    client.kind.as_str(),
                    client.origin,
                    client.name
                );
            }
        }
        ClientsCommand::Disable { client_id } => app.set_client_enabled(&client_id, false).await?,
        ClientsCommand::Enable { client_id } => app.set_client_enabled(&client_id, true).await?,
        ClientsCommand::Remove { client_id } => app.remove_client(&client_id).await?,
    }
    Ok(())
}

async fn keys(app: &AuthApp, command: KeysCommand) -> anyhow::Result<()> {
    match command {
        KeysCommand::Rotate => println!("kid={}", app.rotate_signing_key().await?),
        KeysCommand::List => {
            for key in app.signing_keys().await? {
                let state = key.retired_at_ms.map_or("active", |_| "retired");
                println!("{}\t{}\t{state}", key.kid, key.created_at_ms);
            }
        }
        KeysCommand::Retire { kid } => app.retire_signing_key(&kid).await?,
    }
    Ok(())
}

async fn users(app: &AuthApp, command: UsersCommand) -> anyhow::Result<()> {
    match command {
        UsersCommand::Add {
            email,
            display_name,
            password_stdin,
        } => {
            let password = new_password(password_stdin)?;
            let user_id = app
                .add_user(NewUserRequest {
                    email,
                    display_name,
                    password,
                })
                .await?;
            println!("user_id={user_id}");
        }
        UsersCommand::List => {
            for user in app.users().await? {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    user.id,
                    user.status,
                    if user.platform_admin { "admin" } else { "-" },
                    if user.has_password {
                        "password"
                    } else {
                        "no-password"
                    },
                    user.email,
                    user.display_name
                );
            }
        }
        UsersCommand::SetStatus { user_id, status } => {
            app.set_user_status(&user_id, &status).await?;
        }
        UsersCommand::SetPassword {
            user_id,
            password_stdin,
        } => {
            let password = required_password(password_stdin)?;
            app.set_user_password(&user_id, &password).await?;
        }
        UsersCommand::GrantAdmin { user_id } => app.set_platform_admin(&user_id, true).await?,
        UsersCommand::ClearAdmin { user_id } => app.set_platform_admin(&user_id, false).await?,
    }
    Ok(())
}

async fn memberships(app: &AuthApp, command: MembershipsCommand) -> anyhow::Result<()> {
    match command {
        MembershipsCommand::Add {
            user_id,
            organization,
            location,
            role,
        } => {
            app.add_membership(&user_id, &organization, location.as_deref(), &role)
                .await?;
        }
        MembershipsCommand::List { user_id } => {
            for membership in app.memberships(&user_id).await? {
                println!(
                    "{}\t{}\t{}",
                    membership.organization_id,
                    membership.location_id.as_deref().unwrap_or("-"),
                    membership.role
                );
            }
        }
        MembershipsCommand::Remove {
            user_id,
            organization,
            location,
        } => {
            app.remove_membership(&user_id, &organization, location.as_deref())
                .await?;
        }
    }
    Ok(())
}

async fn consents(app: &AuthApp, command: ConsentsCommand) -> anyhow::Result<()> {
    match command {
        ConsentsCommand::List { user_id } => {
            for consent in app.consents(&user_id).await? {
                let state = if consent.revoked { "revoked" } else { "active" };
                println!("{}\t{state}\t{}", consent.client_id, consent.scopes);
            }
        }
        ConsentsCommand::Revoke { user_id, client } => {
            app.revoke_consent(&user_id, &client).await?;
        }
    }
    Ok(())
}

/// The password of `users add` / `set-password`: the first line of stdin
/// with `--password-stdin`, else `CHATAIGNE_NEW_PASSWORD`, if either is given.
fn new_password(from_stdin: bool) -> anyhow::Result<Option<String>> {
    Ok(if from_stdin {
        Some(read_line_from_stdin()?)
    } else {
        std::env::var("CHATAIGNE_NEW_PASSWORD").ok()
    })
}

/// [`new_password`], where a missing one is an error.
fn required_password(from_stdin: bool) -> anyhow::Result<String> {
    new_password(from_stdin)?.ok_or_else(|| {
        anyhow::anyhow!(
            "no password: pass --password-stdin (one line on stdin) or set CHATAIGNE_NEW_PASSWORD"
        )
    })
}

/// The first line of stdin, without its line ending.
pub(crate) fn read_line_from_stdin() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let line = line.trim_end_matches(['\n', '\r']).to_owned();
    anyhow::ensure!(!line.is_empty(), "nothing on stdin: expected one line");
    Ok(line)
}
