//! `ringdb flush`, `ringdb compact` and `ringdb snapshot`: ask a running node, at its metrics
//! address, to flush or compact every table or the ones named, or to snapshot its data
//! directory (`crate::metrics` serves them), showing a spinner while it works.

use crate::admin::AdminError;
use std::net::SocketAddr;

/// Asks the node whose metrics address is `metrics` to run `operation` (`flush`, `compact`
/// or `snapshot`) with the query parameter `param` (`table=KS[.TABLE]`, `name=NAME`); prints
/// its report.
///
/// # Errors
/// The node cannot be reached, or it refused (no such table, a store failure).
pub fn run(
    metrics: SocketAddr,
    operation: &str,
    param: Option<(&str, &str)>,
) -> Result<(), AdminError> {
    let url = format!("http://{metrics}/admin/{operation}");
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_message(format!("{operation} running on {metrics}"));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.post(&url);
    if let Some((key, value)) = param {
        request = request.query(key, value);
    }
    let sent = request.send_empty();
    spinner.finish_and_clear();
    let mut response = sent.map_err(|e| AdminError::Protocol(format!("{url}: {e}")))?;
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
