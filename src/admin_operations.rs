//! `ringdb flush`, `ringdb compact`, `ringdb snapshot` and `ringdb cleanup`: ask a running node,
//! at its metrics address, to flush or compact every table or the ones named, to snapshot its
//! data directory, or to remove the rows of ranges it holds no replica of
//! (`crate::metrics_http` serves them). The node streams its progress, drawn here as a
//! progress bar (a line per change without a terminal), then its report.

use crate::admin::AdminError;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::BufRead;
use std::net::SocketAddr;

/// Asks the node whose metrics address is `metrics` to run `operation` (`flush`, `compact`,
/// `snapshot` or `cleanup`) with the query parameter `param` (`table=KS[.TABLE]`,
/// `name=NAME`); shows its progress, then prints its report.
///
/// # Errors
/// The node cannot be reached, or it refused or failed (no such table, a store failure).
pub fn run(
    metrics: SocketAddr,
    operation: &str,
    param: Option<(&str, &str)>,
) -> Result<(), AdminError> {
    let url = format!("http://{metrics}/admin/{operation}");
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(format!("{operation} on {metrics}"));
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.post(&url);
    if let Some((key, value)) = param {
        request = request.query(key, value);
    }
    let failed = |e: &dyn std::fmt::Display| AdminError::Protocol(format!("{url}: {e}"));
    let mut response = request.send_empty().map_err(|e| failed(&e))?;
    if !response.status().is_success() {
        bar.finish_and_clear();
        let body = response
            .body_mut()
            .read_to_string()
            .map_err(|e| failed(&e))?;
        return Err(AdminError::Protocol(format!(
            "{operation} refused: {}",
            body.trim()
        )));
    }
    let mut report = Vec::new();
    let mut last_shown = String::new();
    let reader = std::io::BufReader::new(response.body_mut().as_reader());
    for line in reader.lines() {
        let line = line.map_err(|e| failed(&e))?;
        let (kind, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        match kind {
            "progress" => {
                let mut parts = rest.splitn(3, ' ');
                let done = parts.next().and_then(|d| d.parse::<u64>().ok());
                let total = parts.next().and_then(|t| t.parse::<u64>().ok());
                let unit = parts.next().unwrap_or("");
                if let (Some(done), Some(total)) = (done, total) {
                    bar.set_length(total);
                    bar.set_position(done);
                    bar.set_message(format!("{unit} ({operation})"));
                    let shown = format!("{operation}: {done}/{total} {unit}");
                    if bar.is_hidden() && shown != last_shown {
                        eprintln!("{shown}");
                        last_shown = shown;
                    }
                }
            }
            "report" => report.push(rest.to_string()),
            "failed" => {
                bar.finish_and_clear();
                return Err(AdminError::Protocol(format!("{operation} failed: {rest}")));
            }
            _ => report.push(line.clone()),
        }
    }
    bar.finish_and_clear();
    if report.is_empty() {
        return Err(AdminError::Protocol(format!(
            "{operation}: the node closed the connection before it reported"
        )));
    }
    for line in report {
        println!("{line}");
    }
    Ok(())
}
