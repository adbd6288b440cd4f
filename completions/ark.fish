# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ark_global_optspecs
    string join \n n/namespace= kubeconfig= context= h/help V/version
end

function __fish_ark_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ark_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ark_using_subcommand
    set -l cmd (__fish_ark_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ark -n "__fish_ark_needs_command" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_needs_command" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_needs_command" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ark -n "__fish_ark_needs_command" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_needs_command" -f -a "backup" -d 'Work with backups'
complete -c ark -n "__fish_ark_needs_command" -f -a "restore" -d 'Work with restores'
complete -c ark -n "__fish_ark_needs_command" -f -a "backup-location" -d 'Work with backup storage locations'
complete -c ark -n "__fish_ark_needs_command" -f -a "install" -d 'Install ark in the cluster: CRDs, roles, the default location and the server Deployment'
complete -c ark -n "__fish_ark_needs_command" -f -a "uninstall" -d 'Remove what `ark install` applied (never the bucket\'s data)'
complete -c ark -n "__fish_ark_needs_command" -f -a "server" -d 'Run the ark server (the controllers that carry out backups, restores and deletions)'
complete -c ark -n "__fish_ark_needs_command" -f -a "client" -d 'Manage ark\'s own settings (the default namespace)'
complete -c ark -n "__fish_ark_needs_command" -f -a "completion" -d 'Print a shell completion script'
complete -c ark -n "__fish_ark_needs_command" -f -a "version" -d 'Print ark\'s version and the cluster\'s'
complete -c ark -n "__fish_ark_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -f -a "create" -d 'Create a backup'
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -f -a "get" -d 'List backups'
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -f -a "describe" -d 'Show a backup\'s details'
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -f -a "logs" -d 'Print a backup\'s logs'
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -f -a "delete" -d 'Delete backups and all their data through DeleteBackupRequests'
complete -c ark -n "__fish_ark_using_subcommand backup; and not __fish_seen_subcommand_from create get describe logs delete help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l include-namespaces -d 'Namespaces to include (comma-separated; `*` for all)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l exclude-namespaces -d 'Namespaces to exclude (comma-separated)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l include-resources -d 'Resources to include (comma-separated: `deployments`, `deployments.apps`, `*`)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l exclude-resources -d 'Resources to exclude (comma-separated)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l include-cluster-resources -d 'Include cluster-scoped resources (default: only when every namespace is included)' -r -f -a "true\t''
false\t''"
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -s l -l selector -d 'Only objects matching this label selector' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l ttl -d 'How long to keep the backup (Go duration: 720h, 24h30m)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l storage-location -d 'Where to store it (default: the default location)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l timeout -d 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -s w -l wait -d 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from create" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from get" -s l -l selector -d 'Only those matching this label selector' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from get" -s o -l output -d 'Output format' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from get" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from get" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from get" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from get" -l show-labels -d 'Add a LABELS column to the table: each one\'s labels as `key=value,...`'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from get" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from get" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from describe" -s o -l output -d 'Output format' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from describe" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from describe" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from describe" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from describe" -l details -d 'Also show the resource list and every warning and error (read from the bucket)'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from describe" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from describe" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from logs" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from logs" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from logs" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from logs" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from logs" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -s l -l selector -d 'Delete the backups matching this label selector' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -l timeout -d 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -l all -d 'Delete every backup in the namespace'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -l confirm -d 'Do not ask for confirmation (required when standard input is not a terminal)'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -s w -l wait -d 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from delete" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from help" -f -a "create" -d 'Create a backup'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from help" -f -a "get" -d 'List backups'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from help" -f -a "describe" -d 'Show a backup\'s details'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from help" -f -a "logs" -d 'Print a backup\'s logs'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from help" -f -a "delete" -d 'Delete backups and all their data through DeleteBackupRequests'
complete -c ark -n "__fish_ark_using_subcommand backup; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -f -a "create" -d 'Restore from a backup'
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -f -a "get" -d 'List restores'
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -f -a "describe" -d 'Show a restore\'s details'
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -f -a "logs" -d 'Print a restore\'s logs'
complete -c ark -n "__fish_ark_using_subcommand restore; and not __fish_seen_subcommand_from create get describe logs help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l from-backup -d 'The backup to restore from' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l include-namespaces -d 'Namespaces to include (comma-separated; `*` for all)' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l exclude-namespaces -d 'Namespaces to exclude (comma-separated)' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l include-resources -d 'Resources to include (comma-separated: `deployments`, `deployments.apps`, `*`)' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l exclude-resources -d 'Resources to exclude (comma-separated)' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l include-cluster-resources -d 'Include cluster-scoped resources (default: only when every namespace is included)' -r -f -a "true\t''
false\t''"
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -s l -l selector -d 'Only objects matching this label selector' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l namespace-mappings -d 'Restore namespaces under other names: old:new,old2:new2' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l existing-resource-policy -d 'What to do with objects that already exist' -r -f -a "none\t'Keep the object in the cluster; warn when it differs from the backup'
update\t'Patch the object in the cluster to the backed-up state'"
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l hooks-file -d 'Restore hooks (YAML or JSON: the `spec.hooks` of a Restore; `-` reads standard input), checked before anything is created' -r -F
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l timeout -d 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -s w -l wait -d 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from create" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from get" -s l -l selector -d 'Only those matching this label selector' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from get" -s o -l output -d 'Output format' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from get" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from get" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from get" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from get" -l show-labels -d 'Add a LABELS column to the table: each one\'s labels as `key=value,...`'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from get" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from get" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from describe" -s o -l output -d 'Output format' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from describe" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from describe" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from describe" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from describe" -l details -d 'Also show the resource list and every warning and error (read from the bucket)'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from describe" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from describe" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from logs" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from logs" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from logs" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from logs" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from logs" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from help" -f -a "create" -d 'Restore from a backup'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from help" -f -a "get" -d 'List restores'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from help" -f -a "describe" -d 'Show a restore\'s details'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from help" -f -a "logs" -d 'Print a restore\'s logs'
complete -c ark -n "__fish_ark_using_subcommand restore; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and not __fish_seen_subcommand_from create get help" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and not __fish_seen_subcommand_from create get help" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand backup-location; and not __fish_seen_subcommand_from create get help" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and not __fish_seen_subcommand_from create get help" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and not __fish_seen_subcommand_from create get help" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and not __fish_seen_subcommand_from create get help" -f -a "create" -d 'Create a backup storage location'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and not __fish_seen_subcommand_from create get help" -f -a "get" -d 'List backup storage locations'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and not __fish_seen_subcommand_from create get help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -l provider -d 'Object storage provider' -r -f -a "aws\t''
gcp\t''
azure\t''
file\t''"
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -l bucket -d 'Bucket (for `file`: a directory the server can reach)' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -l prefix -d 'Folder inside the bucket' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -l config -d 'Provider settings: region=us-east-1,s3Url=http://...,s3ForcePathStyle=true' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -l credential -d 'Credentials from a Secret in the namespace: SECRET=KEY (default: the server\'s environment)' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -l access-mode -d 'ReadOnly locations are never written: restores only' -r -f -a "ReadWrite\t''
ReadOnly\t''"
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -l default -d 'Make this the default location'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from create" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from get" -s l -l selector -d 'Only those matching this label selector' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from get" -s o -l output -d 'Output format' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from get" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from get" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from get" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from get" -l show-labels -d 'Add a LABELS column to the table: each one\'s labels as `key=value,...`'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from get" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from get" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from help" -f -a "create" -d 'Create a backup storage location'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from help" -f -a "get" -d 'List backup storage locations'
complete -c ark -n "__fish_ark_using_subcommand backup-location; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand install" -l provider -d 'Object storage provider of the default location' -r -f -a "aws\t''
gcp\t''
azure\t''
file\t''"
complete -c ark -n "__fish_ark_using_subcommand install" -l bucket -d 'Bucket of the default location (for `file`: a directory on the node)' -r
complete -c ark -n "__fish_ark_using_subcommand install" -l prefix -d 'Folder inside the bucket' -r
complete -c ark -n "__fish_ark_using_subcommand install" -l secret-file -d 'Credentials file for the provider, stored in the `cloud-credentials` Secret that the location reads (AWS: a credentials file; Azure: KEY=VALUE lines, as Velero\'s plugins take)' -r -F
complete -c ark -n "__fish_ark_using_subcommand install" -l backup-location-config -d 'Settings of the default location: region=us-east-1,s3Url=https://...,s3ForcePathStyle=true' -r
complete -c ark -n "__fish_ark_using_subcommand install" -l image -d 'The server\'s image' -r
complete -c ark -n "__fish_ark_using_subcommand install" -l replicas -d 'Server replicas (one leads, the others wait to take over)' -r
complete -c ark -n "__fish_ark_using_subcommand install" -s o -l output -d 'With --dry-run: print the objects as a List in this format (`kubectl apply -f -` takes it)' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c ark -n "__fish_ark_using_subcommand install" -l timeout -d 'With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the operation itself goes on' -r
complete -c ark -n "__fish_ark_using_subcommand install" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand install" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand install" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand install" -l dry-run -d 'Apply nothing: print what would be applied (with -o json|yaml, the objects themselves)'
complete -c ark -n "__fish_ark_using_subcommand install" -s w -l wait -d 'Wait until it finishes, showing progress; exit non-zero unless it completed without errors'
complete -c ark -n "__fish_ark_using_subcommand install" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand install" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand uninstall" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand uninstall" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand uninstall" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand uninstall" -l confirm -d 'Do not ask for confirmation (required when standard input is not a terminal)'
complete -c ark -n "__fish_ark_using_subcommand uninstall" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand uninstall" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand server" -l scratch-dir -d 'Where tarballs are assembled and unpacked' -r -F
complete -c ark -n "__fish_ark_using_subcommand server" -l backup-sync-period -d 'How often each location\'s bucket is synced into Backup objects' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l store-validation-frequency -d 'How often each location is checked' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l default-backup-ttl -d 'TTL of backups that set none' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l workers -d 'Backups and restores run at once' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l id -d 'This replica\'s identity in the leader-election Lease (default: <hostname>-<pid>)' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l deletion-workers -d 'Backup deletions run at once' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l deletion-request-ttl -d 'How long a processed DeleteBackupRequest is kept' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l garbage-collection-frequency -d 'How often expired backups are looked for' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l restore-hooks-timeout -d 'How long a restore waits, at most, for the exec hooks of its pods' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l restore-hook-execs-at-once -d 'Exec hook commands one restore runs at once (waiting for a free one never counts against a hook\'s execTimeout)' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l metrics-address -d 'Serve Prometheus metrics on this address (e.g. 127.0.0.1:8085)' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l velero-answer-timeout -d 'At start-up, how long to wait for a Velero server to answer a ServerStatusRequest before concluding that none runs in the namespace (ark refuses to start beside one)' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l shutdown-grace -d 'On SIGTERM, how long running backups, restores and deletions may take to finish before the server stops anyway (the next leader fails what is left); keep it below the pod\'s termination grace period' -r
complete -c ark -n "__fish_ark_using_subcommand server" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand server" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand server" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand server" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand server" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand client; and not __fish_seen_subcommand_from config help" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand client; and not __fish_seen_subcommand_from config help" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand client; and not __fish_seen_subcommand_from config help" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand client; and not __fish_seen_subcommand_from config help" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand client; and not __fish_seen_subcommand_from config help" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand client; and not __fish_seen_subcommand_from config help" -f -a "config" -d 'Set or print ark\'s settings'
complete -c ark -n "__fish_ark_using_subcommand client; and not __fish_seen_subcommand_from config help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from config" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from config" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from config" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from config" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from config" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from config" -f -a "set" -d 'Set settings as KEY=VALUE (KEY= unsets one)'
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from config" -f -a "get" -d 'Print settings as `key: value` (`<unset>` when not set)'
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from config" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from help" -f -a "config" -d 'Set or print ark\'s settings'
complete -c ark -n "__fish_ark_using_subcommand client; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand completion" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand completion" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand completion" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand completion" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand completion" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand version" -l timeout -d 'How long to wait for the server in the namespace to answer' -r
complete -c ark -n "__fish_ark_using_subcommand version" -s n -l namespace -d 'The namespace ark\'s objects live in (default: $ARK_NAMESPACE, then the namespace `ark client config set` keeps, then velero)' -r
complete -c ark -n "__fish_ark_using_subcommand version" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c ark -n "__fish_ark_using_subcommand version" -l context -d 'The kubeconfig context to use' -r
complete -c ark -n "__fish_ark_using_subcommand version" -l client-only -d 'Print only the client\'s version, without contacting the cluster'
complete -c ark -n "__fish_ark_using_subcommand version" -s h -l help -d 'Print help'
complete -c ark -n "__fish_ark_using_subcommand version" -s V -l version -d 'Print version'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "backup" -d 'Work with backups'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "restore" -d 'Work with restores'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "backup-location" -d 'Work with backup storage locations'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "install" -d 'Install ark in the cluster: CRDs, roles, the default location and the server Deployment'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "uninstall" -d 'Remove what `ark install` applied (never the bucket\'s data)'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "server" -d 'Run the ark server (the controllers that carry out backups, restores and deletions)'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "client" -d 'Manage ark\'s own settings (the default namespace)'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "completion" -d 'Print a shell completion script'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "version" -d 'Print ark\'s version and the cluster\'s'
complete -c ark -n "__fish_ark_using_subcommand help; and not __fish_seen_subcommand_from backup restore backup-location install uninstall server client completion version help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from backup" -f -a "create" -d 'Create a backup'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from backup" -f -a "get" -d 'List backups'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from backup" -f -a "describe" -d 'Show a backup\'s details'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from backup" -f -a "logs" -d 'Print a backup\'s logs'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from backup" -f -a "delete" -d 'Delete backups and all their data through DeleteBackupRequests'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from restore" -f -a "create" -d 'Restore from a backup'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from restore" -f -a "get" -d 'List restores'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from restore" -f -a "describe" -d 'Show a restore\'s details'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from restore" -f -a "logs" -d 'Print a restore\'s logs'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from backup-location" -f -a "create" -d 'Create a backup storage location'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from backup-location" -f -a "get" -d 'List backup storage locations'
complete -c ark -n "__fish_ark_using_subcommand help; and __fish_seen_subcommand_from client" -f -a "config" -d 'Set or print ark\'s settings'
