// The informer check that crates/kubesim/tests/real_components.rs runs
// against kubesim. scripts/real-components builds it out of tree, pinning
// these modules to the Kubernetes release it builds (v0.X.Y for v1.X.Y).
module kubesim.test/informers

go 1.25

require (
	k8s.io/api v0.36.3
	k8s.io/apimachinery v0.36.3
	k8s.io/client-go v0.36.3
)
