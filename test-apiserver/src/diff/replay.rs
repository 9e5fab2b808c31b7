//! The network edge of the diff tool: sends a step through a `kube::Client` (so any
//! kubeconfig's TLS and credentials work) and reads the raw answer, errors included.

use super::{Answer, Step, differences, warning_text};
use kube::client::Body;
use serde_json::Value;

/// Why a step could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The request could not be built (a bad method or path in the recording).
    #[error("step {step:?}: bad request in the recording: {source}")]
    Request {
        /// The step's name.
        step: String,
        /// What http said.
        source: http::Error,
    },
    /// The server could not be reached or the answer not read.
    #[error("step {step:?}: {source}")]
    Transport {
        /// The step's name.
        step: String,
        /// What kube said.
        source: kube::Error,
    },
}

/// Sends one step and reads its answer, whatever its status code.
pub async fn send(client: &kube::Client, step: &Step) -> Result<Answer, ReplayError> {
    let content_type = step
        .content_type
        .clone()
        .unwrap_or_else(|| "application/json".into());
    let body = step
        .body
        .as_ref()
        .map(|b| b.to_string().into_bytes())
        .unwrap_or_default();
    let request = http::Request::builder()
        .method(step.method.as_str())
        .uri(step.path.as_str())
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::ACCEPT, "application/json")
        .body(Body::from(body))
        .map_err(|source| ReplayError::Request {
            step: step.name.clone(),
            source,
        })?;
    let transport = |source| ReplayError::Transport {
        step: step.name.clone(),
        source,
    };
    let response = client.send(request).await.map_err(transport)?;
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|h| h.to_str().ok())
        .map(warning_text)
        .collect();
    let bytes = response
        .into_body()
        .collect_bytes()
        .await
        .map_err(transport)?;
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    Ok(Answer {
        code,
        warnings,
        body,
    })
}

/// The differences found at one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    /// The step's name.
    pub name: String,
    /// The method and path as sent.
    pub request: String,
    /// Every difference, in words (`left vs right`); empty when the answers agree.
    pub differences: Vec<String>,
}

/// Replays `steps` against both servers in turn (left, then right, step by step, so that
/// each sees the same sequence) with `{run}` replaced by `run`.
pub async fn replay(
    left: &kube::Client,
    right: &kube::Client,
    steps: &[Step],
    run: &str,
) -> Result<Vec<StepReport>, ReplayError> {
    let mut out = vec![];
    for step in steps {
        let step = step.for_run(run);
        let a = send(left, &step).await?;
        let b = send(right, &step).await?;
        out.push(StepReport {
            name: step.name.clone(),
            request: format!("{} {}", step.method, step.path),
            differences: differences(&a, &b),
        });
    }
    Ok(out)
}
