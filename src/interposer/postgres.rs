//! PostgreSQL v3 on the wire (to be written: for now the bytes pass unrecorded).

use super::WorkerTap;
use std::sync::Arc;

/// Forward one connection unchanged.
pub async fn serve(mut client: tokio::net::TcpStream, upstream: std::net::SocketAddr, tap: Arc<WorkerTap>) -> std::io::Result<()> {
    let _ = tap.next_connection(crate::timeline::ServerKind::Postgres);
    let mut server = tokio::net::TcpStream::connect(upstream).await?;
    tokio::io::copy_bidirectional(&mut client, &mut server).await.map(|_| ())
}
