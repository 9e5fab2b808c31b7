//! `crds/` is generated from the Rust types (`make crds`); this fails when they drift apart,
//! so a change to `src/api.rs` cannot land without the YAML that `make install` applies, nor
//! without the kustomization that makes `crds/` the base `deploy/` installs them from.

mod common;

#[test]
fn crds_directory_matches_the_rust_types() {
    let dir = common::repo().join("crds");
    let generated = math_controller::api::crd_files().expect("the CRDs serialize");
    // The three CRDs and their kustomization.
    assert_eq!(generated.len(), 4);
    for (file, yaml) in &generated {
        let on_disk = std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("crds/{file} is missing ({e}); run `make crds`"));
        assert!(
            on_disk == *yaml,
            "crds/{file} is out of date with src/api.rs; run `make crds`"
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("crds/ exists")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    let mut expected: Vec<String> = generated.into_iter().map(|(f, _)| f).collect();
    expected.sort();
    assert_eq!(
        names, expected,
        "crds/ holds files the types do not generate"
    );
}

#[test]
fn crds_carry_the_schema_bounds() {
    let yaml = math_controller::api::crds_yaml().expect("the CRDs serialize");
    assert!(
        yaml.contains("maxItems: 1000"),
        "Tuple spec.numbers is bounded"
    );
    assert!(
        yaml.contains("maximum: 20000"),
        "Fermat spec.number has an upper bound"
    );
    assert!(
        yaml.contains("minimum: 0"),
        "Fermat spec.number has a lower bound"
    );
    assert_eq!(
        yaml.matches("- math\n").count(),
        3,
        "all three kinds are in category math"
    );
}
