// Command informer-check starts a client-go informer for every resource
// that a Kubernetes API server says it serves with list and watch, plus the
// typed informers that kube-scheduler starts, and reports each one that did
// not sync.
//
//	informer-check --kubeconfig FILE [--timeout 30s]
//
// Exit status: 0 when every informer synced, 1 when some did not (each is
// printed as "NOT SYNCED ..." with the last list or watch error seen), 2
// when the check could not run at all.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// watched is one informer under test and the last error its reflector met.
type watched struct {
	name     string
	informer cache.SharedIndexInformer

	mu      sync.Mutex
	lastErr error
}

func (w *watched) onError(_ *cache.Reflector, err error) {
	w.mu.Lock()
	w.lastErr = err
	w.mu.Unlock()
}

func (w *watched) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "informer-check: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to check")
	timeout := flag.Duration("timeout", 30*time.Second, "how long the informers have to sync")
	flag.Parse()
	if *kubeconfig == "" {
		fail("--kubeconfig is required")
	}

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("reading %s: %v", *kubeconfig, err)
	}
	config.UserAgent = "informer-check"

	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		fail("discovery client: %v", err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		fail("dynamic client: %v", err)
	}
	// The typed clients speak protobuf, as kube-scheduler's and
	// kube-controller-manager's do.
	typedConfig := rest.CopyConfig(config)
	typedConfig.ContentType = "application/vnd.kubernetes.protobuf"
	typedConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	typed, err := kubernetes.NewForConfig(typedConfig)
	if err != nil {
		fail("typed client: %v", err)
	}

	var problems []string

	// Every group-version-resource served with list and watch, in every
	// served version (not only the preferred one).
	_, lists, err := disco.ServerGroupsAndResources()
	if err != nil {
		var groupErr *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &groupErr) {
			fail("discovery: %v", err)
		}
		for gv, e := range groupErr.Groups {
			problems = append(problems, fmt.Sprintf("NOT SYNCED %s (discovery): %v", gv, e))
		}
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "watch"}}, lists)
	var gvrs []schema.GroupVersionResource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			problems = append(problems, fmt.Sprintf("NOT SYNCED %s (discovery): %v", list.GroupVersion, err))
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			gvrs = append(gvrs, gv.WithResource(r.Name))
		}
	}
	sort.Slice(gvrs, func(i, j int) bool { return gvrs[i].String() < gvrs[j].String() })

	var all []*watched
	add := func(name string, inf cache.SharedIndexInformer) {
		w := &watched{name: name, informer: inf}
		if err := inf.SetWatchErrorHandler(w.onError); err != nil {
			fail("%s: %v", name, err)
		}
		all = append(all, w)
	}

	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	for _, gvr := range gvrs {
		name := gvr.Resource + "." + gvr.Version
		if gvr.Group != "" {
			name += "." + gvr.Group
		}
		add(name+" (dynamic)", dynFactory.ForResource(gvr).Informer())
	}

	// Typed, whether or not discovery lists them: the informers that
	// kube-scheduler starts (its default plugins, DRA included), then those
	// of kube-controller-manager's default controllers.
	f := informers.NewSharedInformerFactory(typed, 0)
	for _, t := range []struct {
		name     string
		informer cache.SharedIndexInformer
	}{
		// kube-scheduler
		{"pods.v1", f.Core().V1().Pods().Informer()},
		{"nodes.v1", f.Core().V1().Nodes().Informer()},
		{"namespaces.v1", f.Core().V1().Namespaces().Informer()},
		{"persistentvolumes.v1", f.Core().V1().PersistentVolumes().Informer()},
		{"persistentvolumeclaims.v1", f.Core().V1().PersistentVolumeClaims().Informer()},
		{"services.v1", f.Core().V1().Services().Informer()},
		{"replicationcontrollers.v1", f.Core().V1().ReplicationControllers().Informer()},
		{"replicasets.v1.apps", f.Apps().V1().ReplicaSets().Informer()},
		{"statefulsets.v1.apps", f.Apps().V1().StatefulSets().Informer()},
		{"poddisruptionbudgets.v1.policy", f.Policy().V1().PodDisruptionBudgets().Informer()},
		{"storageclasses.v1.storage.k8s.io", f.Storage().V1().StorageClasses().Informer()},
		{"csinodes.v1.storage.k8s.io", f.Storage().V1().CSINodes().Informer()},
		{"csidrivers.v1.storage.k8s.io", f.Storage().V1().CSIDrivers().Informer()},
		{"csistoragecapacities.v1.storage.k8s.io", f.Storage().V1().CSIStorageCapacities().Informer()},
		{"volumeattachments.v1.storage.k8s.io", f.Storage().V1().VolumeAttachments().Informer()},
		{"volumeattributesclasses.v1.storage.k8s.io", f.Storage().V1().VolumeAttributesClasses().Informer()},
		{"resourceclaims.v1.resource.k8s.io", f.Resource().V1().ResourceClaims().Informer()},
		{"resourceslices.v1.resource.k8s.io", f.Resource().V1().ResourceSlices().Informer()},
		{"deviceclasses.v1.resource.k8s.io", f.Resource().V1().DeviceClasses().Informer()},
		// kube-controller-manager
		{"resourceclaimtemplates.v1.resource.k8s.io", f.Resource().V1().ResourceClaimTemplates().Informer()},
		{"deployments.v1.apps", f.Apps().V1().Deployments().Informer()},
		{"daemonsets.v1.apps", f.Apps().V1().DaemonSets().Informer()},
		{"controllerrevisions.v1.apps", f.Apps().V1().ControllerRevisions().Informer()},
		{"jobs.v1.batch", f.Batch().V1().Jobs().Informer()},
		{"cronjobs.v1.batch", f.Batch().V1().CronJobs().Informer()},
		{"horizontalpodautoscalers.v2.autoscaling", f.Autoscaling().V2().HorizontalPodAutoscalers().Informer()},
		{"endpoints.v1", f.Core().V1().Endpoints().Informer()},
		{"endpointslices.v1.discovery.k8s.io", f.Discovery().V1().EndpointSlices().Informer()},
		{"serviceaccounts.v1", f.Core().V1().ServiceAccounts().Informer()},
		{"secrets.v1", f.Core().V1().Secrets().Informer()},
		{"configmaps.v1", f.Core().V1().ConfigMaps().Informer()},
		{"resourcequotas.v1", f.Core().V1().ResourceQuotas().Informer()},
		{"podtemplates.v1", f.Core().V1().PodTemplates().Informer()},
		{"leases.v1.coordination.k8s.io", f.Coordination().V1().Leases().Informer()},
		{"clusterroles.v1.rbac.authorization.k8s.io", f.Rbac().V1().ClusterRoles().Informer()},
		{"certificatesigningrequests.v1.certificates.k8s.io", f.Certificates().V1().CertificateSigningRequests().Informer()},
		{"validatingadmissionpolicies.v1.admissionregistration.k8s.io", f.Admissionregistration().V1().ValidatingAdmissionPolicies().Informer()},
		{"servicecidrs.v1.networking.k8s.io", f.Networking().V1().ServiceCIDRs().Informer()},
		{"ipaddresses.v1.networking.k8s.io", f.Networking().V1().IPAddresses().Informer()},
		{"priorityclasses.v1.scheduling.k8s.io", f.Scheduling().V1().PriorityClasses().Informer()},
		{"events.v1.events.k8s.io", f.Events().V1().Events().Informer()},
	} {
		add(t.name+" (typed)", t.informer)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })

	stop := make(chan struct{})
	dynFactory.Start(stop)
	f.Start(stop)

	deadline := time.Now().Add(*timeout)
	for time.Now().Before(deadline) {
		done := true
		for _, w := range all {
			if !w.informer.HasSynced() {
				done = false
				break
			}
		}
		if done {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	synced := 0
	for _, w := range all {
		if w.informer.HasSynced() {
			synced++
			continue
		}
		if err := w.err(); err != nil {
			problems = append(problems, fmt.Sprintf("NOT SYNCED %s: %v", w.name, err))
		} else {
			problems = append(problems, fmt.Sprintf("NOT SYNCED %s: no error seen", w.name))
		}
	}
	close(stop)

	fmt.Printf("%d of %d informers synced within %s (%d resources served with list and watch)\n",
		synced, len(all), *timeout, len(gvrs))
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}
