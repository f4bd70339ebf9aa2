// Command informer-check starts client-go informers, dynamic and
// metadata-only, for every resource that a Kubernetes API server says it
// serves with list and watch, plus the typed informers that kube-scheduler
// and kube-controller-manager start, and reports each one that did not
// sync.
//
//	informer-check --kubeconfig FILE [--timeout 30s] [--settle 15s]
//
// After the sync it keeps watching for --settle, and reports each watch
// that broke in that time (client-go logs those; the informer stays synced).
//
// Exit status: 0 when every informer synced and no watch broke, 1
// otherwise (each problem is printed as "NOT SYNCED ..." with the last list
// or watch error seen, or "WATCH BROKE: ..."), 2 when the check could not
// run at all.
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
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
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

// logScan passes client-go's log on to stderr and keeps the lines that say
// a watch broke: an informer that synced can still fail on the first event
// it cannot decode, and says so only in its log.
type logScan struct {
	mu     sync.Mutex
	broken map[string]bool
}

func (l *logScan) Write(p []byte) (int, error) {
	os.Stderr.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(string(p), "\n") {
		if strings.Contains(line, "watch ended with error") || strings.Contains(line, "unable to decode an event") {
			if _, msg, ok := strings.Cut(line, "] "); ok {
				line = msg
			}
			l.broken[line] = true
		}
	}
	return len(p), nil
}

func (l *logScan) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range l.broken {
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "informer-check: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to check")
	timeout := flag.Duration("timeout", 30*time.Second, "how long the informers have to sync")
	settle := flag.Duration("settle", 15*time.Second, "how long to keep watching after the sync, for events that break a watch")
	flag.Parse()
	scan := &logScan{broken: map[string]bool{}}
	klog.LogToStderr(false)
	klog.SetOutput(scan)
	if *kubeconfig == "" {
		fail("--kubeconfig is required")
	}

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("reading %s: %v", *kubeconfig, err)
	}
	config.UserAgent = "informer-check"
	// kube-scheduler's defaults: without them, client-side throttling of
	// the many initial lists would eat most of the timeout.
	config.QPS = 50
	config.Burst = 100

	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		fail("discovery client: %v", err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		fail("dynamic client: %v", err)
	}
	meta, err := metadata.NewForConfig(config)
	if err != nil {
		fail("metadata client: %v", err)
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
	metaFactory := metadatainformer.NewSharedInformerFactory(meta, 0)
	for _, gvr := range gvrs {
		name := gvr.Resource + "." + gvr.Version
		if gvr.Group != "" {
			name += "." + gvr.Group
		}
		add(name+" (dynamic)", dynFactory.ForResource(gvr).Informer())
		// Metadata only, as kube-controller-manager's garbage collector and
		// quota controller watch every resource.
		add(name+" (metadata)", metaFactory.ForResource(gvr).Informer())
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
		{"resourceclaims.v1.resource.k8s.io", f.Resource().V1().ResourceClaims().Informer()},
		{"resourceslices.v1.resource.k8s.io", f.Resource().V1().ResourceSlices().Informer()},
		{"deviceclasses.v1.resource.k8s.io", f.Resource().V1().DeviceClasses().Informer()},
		// kube-controller-manager
		{"volumeattributesclasses.v1.storage.k8s.io", f.Storage().V1().VolumeAttributesClasses().Informer()},
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
	metaFactory.Start(stop)
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
	// Watches deliver events only as objects change (kubesim's node
	// Leases renew every 10 s): give them time to.
	time.Sleep(*settle)
	close(stop)
	for _, line := range scan.lines() {
		problems = append(problems, "WATCH BROKE: "+line)
	}

	fmt.Printf("%d of %d informers synced within %s (%d resources served with list and watch)\n",
		synced, len(all), *timeout, len(gvrs))
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}
