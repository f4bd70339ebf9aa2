"""Shared setup for the Python client scripts: a client from the kubeconfig
named on the command line, and a fresh namespace per script."""

import sys
import uuid

from kubernetes import client, config


def setup(prefix):
    if len(sys.argv) != 2:
        sys.exit("usage: %s KUBECONFIG" % sys.argv[0])
    api_client = config.new_client_from_config(config_file=sys.argv[1])
    core = client.CoreV1Api(api_client)
    ns = "%s-%s" % (prefix, uuid.uuid4().hex[:8])
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    return api_client, core, ns


def pod(name, labels=None):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx:1.25")]),
    )


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)
