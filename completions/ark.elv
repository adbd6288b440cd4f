
use builtin;
use str;

set edit:completion:arg-completer[ark] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'ark'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'ark'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand backup 'Work with backups'
            cand restore 'Work with restores'
            cand backup-location 'Work with backup storage locations'
            cand install 'Install ark in the cluster: CRDs, roles, the default location and the server Deployment'
            cand uninstall 'Remove what `ark install` applied (never the bucket''s data)'
            cand server 'Run the ark server (the controllers that carry out backups, restores and deletions)'
            cand client 'Manage ark''s own settings (the default namespace)'
            cand completion 'Print a shell completion script'
            cand version 'Print ark''s version and the cluster''s'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;backup'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand create 'Create a backup'
            cand get 'List backups'
            cand describe 'Show a backup''s details'
            cand logs 'Print a backup''s logs'
            cand delete 'Delete backups and all their data through DeleteBackupRequests'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;backup;create'= {
            cand --include-namespaces 'Namespaces to include (comma-separated; `*` for all)'
            cand --exclude-namespaces 'Namespaces to exclude (comma-separated)'
            cand --include-resources 'Resources to include (comma-separated: `deployments`, `deployments.apps`, `*`)'
            cand --exclude-resources 'Resources to exclude (comma-separated)'
            cand --include-cluster-resources 'Include cluster-scoped resources (default: only when every namespace is included)'
            cand -l 'Only objects matching this label selector'
            cand --selector 'Only objects matching this label selector'
            cand --ttl 'How long to keep the backup (Go duration: 720h, 24h30m)'
            cand --storage-location 'Where to store it (default: the default location)'
            cand --timeout 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -w 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
            cand --wait 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup;get'= {
            cand -l 'Only those matching this label selector'
            cand --selector 'Only those matching this label selector'
            cand -o 'Output format'
            cand --output 'Output format'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --show-labels 'Add a LABELS column to the table: each one''s labels as `key=value,...`'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup;describe'= {
            cand -o 'Output format'
            cand --output 'Output format'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --details 'Also show the resource list and every warning and error (read from the bucket)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup;logs'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup;delete'= {
            cand -l 'Delete the backups matching this label selector'
            cand --selector 'Delete the backups matching this label selector'
            cand --timeout 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --all 'Delete every backup in the namespace'
            cand --confirm 'Do not ask for confirmation (required when standard input is not a terminal)'
            cand -w 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
            cand --wait 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup;help'= {
            cand create 'Create a backup'
            cand get 'List backups'
            cand describe 'Show a backup''s details'
            cand logs 'Print a backup''s logs'
            cand delete 'Delete backups and all their data through DeleteBackupRequests'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;backup;help;create'= {
        }
        &'ark;backup;help;get'= {
        }
        &'ark;backup;help;describe'= {
        }
        &'ark;backup;help;logs'= {
        }
        &'ark;backup;help;delete'= {
        }
        &'ark;backup;help;help'= {
        }
        &'ark;restore'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand create 'Restore from a backup'
            cand get 'List restores'
            cand describe 'Show a restore''s details'
            cand logs 'Print a restore''s logs'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;restore;create'= {
            cand --from-backup 'The backup to restore from'
            cand --include-namespaces 'Namespaces to include (comma-separated; `*` for all)'
            cand --exclude-namespaces 'Namespaces to exclude (comma-separated)'
            cand --include-resources 'Resources to include (comma-separated: `deployments`, `deployments.apps`, `*`)'
            cand --exclude-resources 'Resources to exclude (comma-separated)'
            cand --include-cluster-resources 'Include cluster-scoped resources (default: only when every namespace is included)'
            cand -l 'Only objects matching this label selector'
            cand --selector 'Only objects matching this label selector'
            cand --namespace-mappings 'Restore namespaces under other names: old:new,old2:new2'
            cand --existing-resource-policy 'What to do with objects that already exist'
            cand --hooks-file 'Restore hooks (YAML or JSON: the `spec.hooks` of a Restore; `-` reads standard input), checked before anything is created'
            cand --timeout 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -w 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
            cand --wait 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;restore;get'= {
            cand -l 'Only those matching this label selector'
            cand --selector 'Only those matching this label selector'
            cand -o 'Output format'
            cand --output 'Output format'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --show-labels 'Add a LABELS column to the table: each one''s labels as `key=value,...`'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;restore;describe'= {
            cand -o 'Output format'
            cand --output 'Output format'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --details 'Also show the resource list and every warning and error (read from the bucket)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;restore;logs'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;restore;help'= {
            cand create 'Restore from a backup'
            cand get 'List restores'
            cand describe 'Show a restore''s details'
            cand logs 'Print a restore''s logs'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;restore;help;create'= {
        }
        &'ark;restore;help;get'= {
        }
        &'ark;restore;help;describe'= {
        }
        &'ark;restore;help;logs'= {
        }
        &'ark;restore;help;help'= {
        }
        &'ark;backup-location'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand create 'Create a backup storage location'
            cand get 'List backup storage locations'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;backup-location;create'= {
            cand --provider 'Object storage provider'
            cand --bucket 'Bucket (for `file`: a directory the server can reach)'
            cand --prefix 'Folder inside the bucket'
            cand --config 'Provider settings: region=us-east-1,s3Url=http://...,s3ForcePathStyle=true'
            cand --credential 'Credentials from a Secret in the namespace: SECRET=KEY (default: the server''s environment)'
            cand --access-mode 'ReadOnly locations are never written: restores only'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --default 'Make this the default location'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup-location;get'= {
            cand -l 'Only those matching this label selector'
            cand --selector 'Only those matching this label selector'
            cand -o 'Output format'
            cand --output 'Output format'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --show-labels 'Add a LABELS column to the table: each one''s labels as `key=value,...`'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup-location;help'= {
            cand create 'Create a backup storage location'
            cand get 'List backup storage locations'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;backup-location;help;create'= {
        }
        &'ark;backup-location;help;get'= {
        }
        &'ark;backup-location;help;help'= {
        }
        &'ark;install'= {
            cand --provider 'Object storage provider of the default location'
            cand --bucket 'Bucket of the default location (for `file`: a directory on the node)'
            cand --prefix 'Folder inside the bucket'
            cand --secret-file 'Credentials file for the provider, stored in the `cloud-credentials` Secret that the location reads (AWS: a credentials file; Azure: KEY=VALUE lines, as Velero''s plugins take)'
            cand --backup-location-config 'Settings of the default location: region=us-east-1,s3Url=https://...,s3ForcePathStyle=true'
            cand --image 'The server''s image'
            cand --replicas 'Server replicas (one leads, the others wait to take over)'
            cand -o 'With --dry-run: print the objects as a List in this format (`kubectl apply -f -` takes it)'
            cand --output 'With --dry-run: print the objects as a List in this format (`kubectl apply -f -` takes it)'
            cand --timeout 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --dry-run 'Apply nothing: print what would be applied (with -o json|yaml, the objects themselves)'
            cand -w 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
            cand --wait 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;uninstall'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --confirm 'Do not ask for confirmation (required when standard input is not a terminal)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;server'= {
            cand --scratch-dir 'Where tarballs are assembled and unpacked'
            cand --backup-sync-period 'How often each location''s bucket is synced into Backup objects'
            cand --store-validation-frequency 'How often each location is checked'
            cand --default-backup-ttl 'TTL of backups that set none'
            cand --workers 'Backups and restores run at once'
            cand --id 'This replica''s identity in the leader-election Lease (default: <hostname>-<pid>)'
            cand --deletion-workers 'Backup deletions run at once'
            cand --deletion-request-ttl 'How long a processed DeleteBackupRequest is kept'
            cand --garbage-collection-frequency 'How often expired backups are looked for'
            cand --restore-hooks-timeout 'How long a restore waits, at most, for the exec hooks of its pods'
            cand --restore-hook-execs-at-once 'Exec hook commands one restore runs at once (waiting for a free one never counts against a hook''s execTimeout)'
            cand --metrics-address 'Serve Prometheus metrics on this address (e.g. 127.0.0.1:8085)'
            cand --velero-answer-timeout 'At start-up, how long to wait for a Velero server to answer a ServerStatusRequest before concluding that none runs in the namespace (ark refuses to start beside one)'
            cand --shutdown-grace 'On SIGTERM, how long running backups, restores and deletions may take to finish before the server stops anyway (the next leader fails what is left); keep it below the pod''s termination grace period'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;client'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand config 'Set or print ark''s settings'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;client;config'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand set 'Set settings as KEY=VALUE (KEY= unsets one)'
            cand get 'Print settings as `key: value` (`<unset>` when not set)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;client;config;set'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;client;config;get'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;client;config;help'= {
            cand set 'Set settings as KEY=VALUE (KEY= unsets one)'
            cand get 'Print settings as `key: value` (`<unset>` when not set)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;client;config;help;set'= {
        }
        &'ark;client;config;help;get'= {
        }
        &'ark;client;config;help;help'= {
        }
        &'ark;client;help'= {
            cand config 'Set or print ark''s settings'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;client;help;config'= {
            cand set 'Set settings as KEY=VALUE (KEY= unsets one)'
            cand get 'Print settings as `key: value` (`<unset>` when not set)'
        }
        &'ark;client;help;config;set'= {
        }
        &'ark;client;help;config;get'= {
        }
        &'ark;client;help;help'= {
        }
        &'ark;completion'= {
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;version'= {
            cand --timeout 'How long to wait for the server in the namespace to answer'
            cand -n 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --namespace 'The namespace ark''s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand --client-only 'Print only the client''s version, without contacting the cluster'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;help'= {
            cand backup 'Work with backups'
            cand restore 'Work with restores'
            cand backup-location 'Work with backup storage locations'
            cand install 'Install ark in the cluster: CRDs, roles, the default location and the server Deployment'
            cand uninstall 'Remove what `ark install` applied (never the bucket''s data)'
            cand server 'Run the ark server (the controllers that carry out backups, restores and deletions)'
            cand client 'Manage ark''s own settings (the default namespace)'
            cand completion 'Print a shell completion script'
            cand version 'Print ark''s version and the cluster''s'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;help;backup'= {
            cand create 'Create a backup'
            cand get 'List backups'
            cand describe 'Show a backup''s details'
            cand logs 'Print a backup''s logs'
            cand delete 'Delete backups and all their data through DeleteBackupRequests'
        }
        &'ark;help;backup;create'= {
        }
        &'ark;help;backup;get'= {
        }
        &'ark;help;backup;describe'= {
        }
        &'ark;help;backup;logs'= {
        }
        &'ark;help;backup;delete'= {
        }
        &'ark;help;restore'= {
            cand create 'Restore from a backup'
            cand get 'List restores'
            cand describe 'Show a restore''s details'
            cand logs 'Print a restore''s logs'
        }
        &'ark;help;restore;create'= {
        }
        &'ark;help;restore;get'= {
        }
        &'ark;help;restore;describe'= {
        }
        &'ark;help;restore;logs'= {
        }
        &'ark;help;backup-location'= {
            cand create 'Create a backup storage location'
            cand get 'List backup storage locations'
        }
        &'ark;help;backup-location;create'= {
        }
        &'ark;help;backup-location;get'= {
        }
        &'ark;help;install'= {
        }
        &'ark;help;uninstall'= {
        }
        &'ark;help;server'= {
        }
        &'ark;help;client'= {
            cand config 'Set or print ark''s settings'
        }
        &'ark;help;client;config'= {
            cand set 'Set settings as KEY=VALUE (KEY= unsets one)'
            cand get 'Print settings as `key: value` (`<unset>` when not set)'
        }
        &'ark;help;client;config;set'= {
        }
        &'ark;help;client;config;get'= {
        }
        &'ark;help;completion'= {
        }
        &'ark;help;version'= {
        }
        &'ark;help;help'= {
        }
    ]
    $completions[$command]
}
