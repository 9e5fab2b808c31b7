//! The CRDs generated from a track's Rust types, as `make manifests` did in kubebuilder.

use std::path::Path;

use crate::track::Track;

/// The track's three CRDs as one multi-document YAML stream (for `kubectl apply -f -`).
pub fn yaml(track: &Track) -> anyhow::Result<String> {
    let mut out = String::new();
    for crd in (track.crds)() {
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(&crd)?);
    }
    Ok(out)
}

/// Writes one file per CRD into `dir` (`numbers.math.example.com.yaml`, ...); their names.
pub fn write(track: &Track, dir: &Path) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let mut names = Vec::new();
    for crd in (track.crds)() {
        let name = format!("{}.yaml", crd.metadata.name.clone().unwrap_or_default());
        std::fs::write(dir.join(&name), serde_yaml::to_string(&crd)?)?;
        names.push(name);
    }
    Ok(names)
}
