//! The auth-service binary: serves (default), or runs one administration
//! command against the configured database — `migrate` (used by the
//! deployment's migration job), `clients`, `keys`, `users`, `memberships`,
//! `consents`, `sessions`. Every change is read live by every replica: it
//! takes effect at the next request.

use std::path::PathBuf;

use anyhow::Context;
use chataigne_auth::{AuthApp, ClientKind, Config, NewClientRequest};
use chataigne_common::telemetry::{self, LogFormat};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(about = "Chataigne auth-service: OAuth 2.1 authorization server and gRPC AuthService")]
struct Args {
    /// TOML configuration file; `CHATAIGNE_*` variables override it.
    #[arg(long, env = "CHATAIGNE_CONFIG", global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve gRPC and HTTP until SIGTERM (the default).
    Serve,
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
    /// Memberships (users and service accounts).
    #[command(subcommand)]
    Memberships(MembershipsCommand),
    /// Users' consents to clients.
    #[command(subcommand)]
    Consents(ConsentsCommand),
    /// Users' sessions (their access and refresh tokens).
    #[command(subcommand)]
    Sessions(SessionsCommand),
}

#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    Public,
    Confidential,
    Service,
}

#[derive(Subcommand)]
enum ClientsCommand {
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
    List,
    Disable {
        client_id: String,
    },
    Enable {
        client_id: String,
    },
}

#[derive(Subcommand)]
enum KeysCommand {
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

#[derive(Subcommand)]
enum UsersCommand {
    /// active, revoked or banned; takes effect at the next request.
    SetStatus { user_id: String, status: String },
    /// Read the new password from the CHATAIGNE_NEW_PASSWORD variable.
    SetPassword {
        user_id: String,
        #[arg(long, env = "CHATAIGNE_NEW_PASSWORD", hide_env_values = true)]
        password: String,
    },
    /// Make the user a platform admin (the admin scopes still need consent).
    GrantAdmin { user_id: String },
    /// Withdraw the user's platform-admin role.
    ClearAdmin { user_id: String },
}

#[derive(Subcommand)]
enum ConsentsCommand {
    /// The user's consents: client id, active or revoked, scopes.
    List { user_id: String },
    /// Withdraw the user's consent to the client.
    Revoke {
        user_id: String,
        #[arg(long)]
        client: String,
    },
}

#[derive(Subcommand)]
enum SessionsCommand {
    /// End the user's sessions (through one client with --client), their
    /// refresh tokens and, for all clients, the sign-in of the consent page.
    Revoke {
        user_id: String,
        #[arg(long)]
        client: Option<String>,
    },
}

#[derive(Subcommand)]
enum MembershipsCommand {
    Add {
        user_id: String,
        #[arg(long)]
        organization: String,
        #[arg(long)]
        location: Option<String>,
        #[arg(long)]
        role: String,
    },
    Remove {
        user_id: String,
        #[arg(long)]
        organization: String,
        #[arg(long)]
        location: Option<String>,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut config: Config =
        chataigne_common::config::load(&Config::default(), args.config.as_deref())?;
    config.validate()?;
    let command = args.command.unwrap_or(Command::Serve);
    if let Command::Serve = command {
        telemetry::init("auth-service", LogFormat::Json);
        let grpc = tokio::net::TcpListener::bind(&config.grpc_listen)
            .await
            .with_context(|| format!("binding grpc_listen {}", config.grpc_listen))?;
        let http = tokio::net::TcpListener::bind(&config.http_listen)
            .await
            .with_context(|| format!("binding http_listen {}", config.http_listen))?;
        let metrics = match &config.metrics_listen {
            Some(addr) => Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("binding metrics_listen {addr}"))?,
            ),
            None => None,
        };
        let listeners = chataigne_auth::Listeners {
            grpc,
            http,
            metrics,
        };
        let served =
            chataigne_auth::run(config, listeners, chataigne_common::shutdown::signal()).await;
        telemetry::shutdown();
        return served;
    }
    if let Command::Migrate = command {
        chataigne_auth::migrate(&config.database).await?;
        println!("migrations applied");
        return Ok(());
    }
    config.seed_demo = false;
    let app = AuthApp::build(config).await?;
    administer(&app, command).await
}

async fn administer(app: &AuthApp, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve | Command::Migrate => {}
        Command::Clients(ClientsCommand::Add {
            client_id,
            name,
            kind,
            redirect_uris,
            scopes,
        }) => {
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
        Command::Clients(ClientsCommand::List) => {
            for client in app.clients().await? {
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    client.client_id,
                    client.kind.as_str(),
                    if client.enabled {
                        "enabled"
                    } else {
                        "disabled"
                    },
                    client.origin,
                    client.name
                );
            }
        }
        Command::Clients(ClientsCommand::Disable { client_id }) => {
            app.set_client_enabled(&client_id, false).await?;
        }
        Command::Clients(ClientsCommand::Enable { client_id }) => {
            app.set_client_enabled(&client_id, true).await?;
        }
        Command::Keys(KeysCommand::Rotate) => println!("kid={}", app.rotate_signing_key().await?),
        Command::Keys(KeysCommand::List) => {
            for key in app.signing_keys().await? {
                let state = key.retired_at_ms.map_or("active", |_| "retired");
                println!("{}\t{}\t{state}", key.kid, key.created_at_ms);
            }
        }
        Command::Keys(KeysCommand::Retire { kid }) => app.retire_signing_key(&kid).await?,
        Command::Users(UsersCommand::SetStatus { user_id, status }) => {
            app.set_user_status(&user_id, &status).await?;
        }
        Command::Users(UsersCommand::SetPassword { user_id, password }) => {
            app.set_user_password(&user_id, &password).await?;
        }
        Command::Users(UsersCommand::GrantAdmin { user_id }) => {
            app.set_platform_admin(&user_id, true).await?;
        }
        Command::Users(UsersCommand::ClearAdmin { user_id }) => {
            app.set_platform_admin(&user_id, false).await?;
        }
        Command::Consents(ConsentsCommand::List { user_id }) => {
            for consent in app.consents(&user_id).await? {
                let state = if consent.revoked { "revoked" } else { "active" };
                println!("{}\t{state}\t{}", consent.client_id, consent.scopes);
            }
        }
        Command::Consents(ConsentsCommand::Revoke { user_id, client }) => {
            app.revoke_consent(&user_id, &client).await?;
        }
        Command::Sessions(SessionsCommand::Revoke { user_id, client }) => {
            let ended = app
                .revoke_user_sessions(&user_id, client.as_deref())
                .await?;
            println!("sessions_ended={ended}");
        }
        Command::Memberships(MembershipsCommand::Add {
            user_id,
            organization,
            location,
            role,
        }) => {
            app.add_membership(&user_id, &organization, location.as_deref(), &role)
                .await?;
        }
        Command::Memberships(MembershipsCommand::Remove {
            user_id,
            organization,
            location,
        }) => {
            app.remove_membership(&user_id, &organization, location.as_deref())
                .await?;
        }
    }
    Ok(())
}
