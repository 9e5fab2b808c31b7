//! Leader election settings: the Lease's name and namespace, this replica's identity, and the
//! three durations, checked against each other before any request.

use std::time::Duration;

use super::error::Error;
use super::lease::random_u64;

/// The Lease's name; kubebuilder names it `<hash>.<domain>`, ours needs no hash since the
/// project's name is unique in its group.
pub const DEFAULT_LEASE_NAME: &str = "math-controller.math.example.com";

/// Where the service account's namespace is mounted in a pod; the fallback when `POD_NAMESPACE`
/// is not set.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Leader election settings; the durations default to controller-runtime's (15 s / 10 s / 2 s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// The Lease's name.
    pub lease_name: String,
    /// The Lease's namespace (in a cluster, the manager's own).
    pub namespace: String,
    /// This replica's name in `holderIdentity`; unique among replicas.
    pub identity: String,
    /// How long a standby waits, after the holder's last renewal it saw, before taking over.
    pub lease_duration: Duration,
    /// How long the holder keeps trying to renew before it gives up leadership; shorter than
    /// `lease_duration` so that it stops before a standby may start.
    pub renew_deadline: Duration,
    /// Pause between attempts to acquire or renew.
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    /// A configuration with controller-runtime's default durations.
    pub fn new(
        lease_name: impl Into<String>,
        namespace: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        LeaderElectionConfig {
            lease_name: lease_name.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// The configuration for `lease_name`, with identity and namespace taken from the pod
    /// (`POD_NAME`, `POD_NAMESPACE` from the downward API), the namespace falling back to the
    /// mounted service-account namespace; see [`lease_namespace`] for why there is no default
    /// outside a cluster. Without `POD_NAME` the identity is the host name plus a random suffix,
    /// so two local runs never mistake each other for themselves.
    pub fn from_env(lease_name: &str, namespace: Option<&str>) -> Result<Self, Error> {
        let service_account_namespace = || std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE).ok();
        let namespace = lease_namespace(
            namespace,
            env_nonempty("POD_NAMESPACE"),
            service_account_namespace,
        )?;
        let identity = env_nonempty("POD_NAME").unwrap_or_else(random_identity);
        Ok(Self::new(lease_name, namespace, identity))
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        let problem = if self.lease_name.is_empty() || self.namespace.is_empty() {
            Some("the lease name and namespace must not be empty".to_string())
        } else if self.identity.is_empty() {
            Some("the identity must not be empty".to_string())
        } else if self.retry_period.is_zero() {
            Some("the retry period must be positive".to_string())
        } else if self.renew_deadline >= self.lease_duration {
            Some(format!(
                "the renew deadline ({:?}) must be shorter than the lease duration ({:?})",
                self.renew_deadline, self.lease_duration
            ))
        } else if self.retry_period >= self.renew_deadline {
            Some(format!(
                "the retry period ({:?}) must be shorter than the renew deadline ({:?})",
                self.retry_period, self.renew_deadline
            ))
        } else if self.lease_duration.as_secs() == 0
            || self.lease_duration.as_secs() > i32::MAX as u64
        {
            Some("the lease duration must be between 1 s and i32::MAX s".to_string())
        } else {
            None
        };
        problem.map_or(Ok(()), |p| Err(Error::Config(p)))
    }
}

/// The Lease's namespace: the one given, else in a cluster the pod's own (`POD_NAMESPACE`, else
/// the mounted service-account namespace). Outside a cluster there is no safe default, as
/// controller-runtime also decides: the kubeconfig's namespace differs from laptop to laptop, and
/// a manager that took its Lease there would lead next to the Deployment's leader in
/// `math-system`, and both would reconcile.
pub fn lease_namespace(
    given: Option<&str>,
    pod_namespace: Option<String>,
    service_account_namespace: impl FnOnce() -> Option<String>,
) -> Result<String, Error> {
    let nonempty = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    given
        .map(str::to_string)
        .and_then(nonempty)
        .or_else(|| pod_namespace.and_then(nonempty))
        .or_else(|| service_account_namespace().and_then(nonempty))
        .ok_or(Error::NamespaceRequired)
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn random_identity() -> String {
    let host = env_nonempty("HOSTNAME")
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "math-controller".to_string());
    format!("{host}_{:016x}", random_u64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_controller_runtime_and_validate() {
        let cfg = LeaderElectionConfig::new("l", "ns", "me");
        assert_eq!(cfg.lease_duration, Duration::from_secs(15));
        assert_eq!(cfg.renew_deadline, Duration::from_secs(10));
        assert_eq!(cfg.retry_period, Duration::from_secs(2));
        cfg.validate().unwrap();
    }

    #[test]
    fn impossible_timings_are_refused() {
        let mut cfg = LeaderElectionConfig::new("l", "ns", "me");
        cfg.renew_deadline = Duration::from_secs(15);
        assert!(matches!(cfg.validate(), Err(Error::Config(_))));
        let mut cfg = LeaderElectionConfig::new("l", "ns", "me");
        cfg.retry_period = Duration::from_secs(10);
        assert!(cfg.validate().is_err());
        assert!(LeaderElectionConfig::new("l", "ns", "").validate().is_err());
        assert!(
            LeaderElectionConfig::new("", "ns", "me")
                .validate()
                .is_err()
        );
    }

    #[test]
    fn the_lease_namespace_is_given_or_the_pods() {
        let none = || None;
        assert_eq!(
            lease_namespace(Some("math-system"), Some("pod-ns".into()), none).unwrap(),
            "math-system"
        );
        assert_eq!(
            lease_namespace(None, Some("pod-ns".into()), none).unwrap(),
            "pod-ns"
        );
        assert_eq!(
            lease_namespace(None, None, || Some("sa-ns\n".into())).unwrap(),
            "sa-ns"
        );
        assert!(matches!(
            lease_namespace(None, None, none),
            Err(Error::NamespaceRequired)
        ));
        assert!(matches!(
            lease_namespace(Some(""), None, || Some(" ".into())),
            Err(Error::NamespaceRequired)
        ));
    }

    #[test]
    fn random_identities_differ() {
        assert_ne!(random_identity(), random_identity());
    }
}
