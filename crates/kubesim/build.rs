//! Records the Cargo profile the binary is built with (its target
//! directory's name: `debug`, `release`, `release-fat`), which benchmarks
//! print beside their figures.

fn main() {
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out.
    let profile = std::path::Path::new(&out)
        .ancestors()
        .nth(3)
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("unknown")
        .to_string();
    println!("cargo:rustc-env=KUBESIM_BUILD_PROFILE={profile}");
    println!("cargo:rerun-if-changed=build.rs");
}
