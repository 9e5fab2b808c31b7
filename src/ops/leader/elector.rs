//! One candidate's requests on the Lease: read it, take or renew it with an UPDATE carrying
//! the resourceVersion read (so that of two racing candidates the API server accepts one), and
//! hand it back. The decisions come from [`super::lease`]; this file only talks to the server.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::time::Instant;

use super::config::LeaderElectionConfig;
use super::error::Error;
use super::lease::{Attempt, Record, holder_spec, released_spec, valid_other_holder};

/// The state of one candidate between attempts.
pub(super) struct Elector {
    pub(super) api: Api<Lease>,
    pub(super) cfg: LeaderElectionConfig,
    pub(super) observed: Option<(Record, Instant)>,
}

impl Elector {
    fn api_error(&self, source: kube::Error) -> Error {
        Error::Api {
            namespace: self.cfg.namespace.clone(),
            name: self.cfg.lease_name.clone(),
            source,
        }
    }

    fn observe(&mut self, record: Record) {
        let now = Instant::now();
        match &self.observed {
            Some((seen, _)) if *seen == record => {}
            _ => self.observed = Some((record, now)),
        }
    }

    /// No lease yet: create it held by `me` (a 409: another candidate created it first).
    async fn create(&mut self, me: &str) -> Result<Attempt, Error> {
        let mut spec = holder_spec(
            &Record::of(None),
            me,
            self.cfg.lease_duration,
            Timestamp::now(),
        );
        // A new lease has seen no transition yet (client-go starts at 0 too).
        spec.lease_transitions = Some(0);
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.cfg.lease_name.clone()),
                namespace: Some(self.cfg.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                self.observe(Record::of(created.spec.as_ref()));
                Ok(Attempt::Held)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::Raced),
            Err(e) => Err(self.api_error(e)),
        }
    }

    pub(super) async fn try_acquire_or_renew(&mut self) -> Result<Attempt, Error> {
        let me = self.cfg.identity.clone();
        let existing = self
            .api
            .get_opt(&self.cfg.lease_name)
            .await
            .map_err(|e| self.api_error(e))?;
        let Some(mut lease) = existing else {
            return self.create(&me).await;
        };

        let record = Record::of(lease.spec.as_ref());
        self.observe(record.clone());
        let observed_at = self.observed.as_ref().map_or_else(Instant::now, |o| o.1);
        if let Some(holder) = valid_other_holder(
            &record,
            &me,
            observed_at,
            Instant::now(),
            self.cfg.lease_duration,
        ) {
            return Ok(Attempt::HeldBy(holder));
        }

        // resourceVersion stays as read: the update succeeds only if nobody wrote in between.
        lease.spec = Some(holder_spec(
            &record,
            &me,
            self.cfg.lease_duration,
            Timestamp::now(),
        ));
        match self
            .api
            .replace(&self.cfg.lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                self.observe(Record::of(updated.spec.as_ref()));
                Ok(Attempt::Held)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::Raced),
            Err(e) => Err(self.api_error(e)),
        }
    }

    /// Clears the holder if it is still us; retries conflicts (another candidate may have read
    /// the lease meanwhile, its update then fails, not ours).
    pub(super) async fn release(&mut self) -> Result<(), Error> {
        for _ in 0..5 {
            let Some(mut lease) = self
                .api
                .get_opt(&self.cfg.lease_name)
                .await
                .map_err(|e| self.api_error(e))?
            else {
                return Ok(());
            };
            let record = Record::of(lease.spec.as_ref());
            if record.holder != self.cfg.identity {
                return Ok(());
            }
            lease.spec = Some(released_spec(&record, Timestamp::now()));
            match self
                .api
                .replace(&self.cfg.lease_name, &PostParams::default(), &lease)
                .await
            {
                Ok(_) => {
                    tracing::info!(
                        lease = %self.cfg.lease_name,
                        namespace = %self.cfg.namespace,
                        identity = %self.cfg.identity,
                        "released the leader lease, a standby can take over now"
                    );
                    return Ok(());
                }
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(self.api_error(e)),
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for Elector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elector")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}
