//! Connections to the two servers every role talks to, set up the same way everywhere.
//! Redis connections have no response timeout, because consumers block in XREADGROUP.

use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;

/// The PostgreSQL schema the tool owns; it touches nothing outside it.
pub const SCHEMA: &str = "ordlab";

/// The side-effect sink's own schema ([`crate::side_effect`]), named here so that what owns
/// schemas on a server (the service layer) needs nothing of the sink.
pub const SINK_SCHEMA: &str = "ordlab_sink";

/// A Redis connection without a response timeout (blocking commands wait as long as needed).
pub async fn redis(url: &str) -> redis::RedisResult<MultiplexedConnection> {
    let client = redis::Client::open(url)?;
    let config = AsyncConnectionConfig::new().set_response_timeout(None);
    client.get_multiplexed_async_connection_with_config(&config).await
}

/// What PostgreSQL said, in one line, for an error message: the server's own text when it
/// answered with an error (tokio-postgres's `Display` says only "db error"), with the fix when
/// the fix is known: `sorry, too many clients already` is the server's `max_connections`.
pub fn postgres_said(e: &tokio_postgres::Error) -> String {
    let Some(db) = e.as_db_error() else { return e.to_string() };
    let code = db.code();
    let said = format!("{}: {} (SQLSTATE {})", db.severity(), db.message(), code.code());
    if *code == tokio_postgres::error::SqlState::TOO_MANY_CONNECTIONS {
        format!("{said}: every connection the run opens (one or more per process) counts against the server's max_connections (ordlab's own PostgreSQL has 100): run fewer processes, or use --backend external with a server whose max_connections is higher")
    } else {
        said.replace('\n', " ")
    }
}

/// A PostgreSQL client whose connection runs on a background task.
pub async fn postgres(config: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(config, tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        // The connection ends when the client is dropped or the server goes away; a lost
        // connection surfaces as an error on the next query, so nothing to report here.
        let _ = connection.await;
    });
    Ok(client)
}
