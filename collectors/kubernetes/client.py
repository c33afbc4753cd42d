"""Build the Kubernetes ``ApiClient`` annex lists with: kubeconfig or in-cluster service account.

The client identifies itself (``User-Agent: annex/<version>``) so that API server operators can
see and throttle it, asks for gzip (list pages are large and compress ~10×), and has urllib3's
own retries switched off: ``listing.Lister`` retries with the API server's semantics instead.
Credentials stay inside the client's configuration: nothing here logs or repeats them.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from annex.errors import ClusterAccessError, ConfigError
from annex.settings import KubernetesSettings


def annex_version() -> str:
    try:
        return metadata.version("annex")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def api_client_for(
    *,
    kubeconfig: Path | None,
    context: str | None,
    in_cluster: bool,
    settings: KubernetesSettings,
) -> client.ApiClient:
    """An ``ApiClient`` for one cluster.

    ``in_cluster`` uses the pod's service account (``KUBERNETES_SERVICE_HOST`` and the mounted
    token); otherwise the kubeconfig file (``None``: ``$KUBECONFIG`` or ``~/.kube/config``) and
    context (``None``: its current context). Raises ``ConfigError`` when the configuration is
    missing or names an unknown context, ``ClusterAccessError`` when credentials cannot be
    obtained (for example a failing exec plugin).
    """
    configuration = client.Configuration()
    if in_cluster:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except ConfigException as exc:
            raise ConfigError(
                f"in-cluster configuration is unavailable: {exc}",
                hint="in_cluster works only inside a pod with a service account; "
                "outside a cluster give a kubeconfig (and context) instead",
            ) from None
    else:
        where = str(kubeconfig) if kubeconfig is not None else "the default kubeconfig"
        if kubeconfig is not None and not kubeconfig.is_file():
            raise ConfigError(
                f"kubeconfig {kubeconfig} does not exist",
                hint="pass --kubeconfig with an existing file, or set clusters[].kubeconfig",
            )
        try:
            config.load_kube_config(
                config_file=str(kubeconfig) if kubeconfig is not None else None,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except ConfigException as exc:
            text = str(exc)
            if "context" in text.lower() or "invalid kube-config" in text.lower():
                raise ConfigError(
                    f"cannot use {where}"
                    + (f" with context {context!r}" if context else "")
                    + f": {text}",
                    hint="list the contexts with `kubectl config get-contexts` and pass one "
                    "with --context (or clusters[].context)",
                ) from None
            raise ClusterAccessError(
                f"cannot obtain credentials from {where}: {text}",
                hint="check that `kubectl get nodes` works with the same kubeconfig and context",
            ) from None
        except OSError as exc:
            raise ConfigError(f"cannot read {where}: {exc}") from None
    configuration.retries = False  # listing.Lister owns retries
    api = client.ApiClient(configuration)
    api.user_agent = f"annex/{annex_version()}"
    api.set_default_header("Accept-Encoding", "gzip")
    return api
