//! `ringdb flush` and `ringdb compact`: ask a running node, at its metrics address, to flush
//! or compact every table or the ones named (`crate::metrics` serves them).

use crate::admin::AdminError;
use std::net::SocketAddr;

/// Asks the node whose metrics address is `metrics` to run `operation` (`flush` or `compact`)
/// on `table` (`KS`, `KS.TABLE`, or every table); prints its report.
///
/// # Errors
/// The node cannot be reached, or it refused (no such table, a store failure).
pub fn run(metrics: SocketAddr, operation: &str, table: Option<&str>) -> Result<(), AdminError> {
    let mut url = format!("http://{metrics}/admin/{operation}");
    if let Some(t) = table {
        url.push_str("?table=");
        url.push_str(t);
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .post(&url)
        .send_empty()
        .map_err(|e| AdminError::Protocol(format!("{url}: {e}")))?;
    let status = response.status();
    let body = response
        .body_mut()
        .read_to_string()
        .map_err(|e| AdminError::Protocol(format!("{url}: {e}")))?;
    if !status.is_success() {
        return Err(AdminError::Protocol(format!(
            "{operation} refused: {}",
            body.trim()
        )));
    }
    print!("{body}");
    Ok(())
}
