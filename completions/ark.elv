
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
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand backup 'Work with backups'
            cand restore 'Work with restores'
            cand backup-location 'Work with backup storage locations'
            cand server 'Run the ark server (the controllers that carry out backups, restores and deletions)'
            cand completion 'Print a shell completion script'
            cand version 'Print ark''s version and the cluster''s'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'ark;backup'= {
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
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
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
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
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup;describe'= {
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup;logs'= {
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;backup;delete'= {
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
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
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
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
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;restore;get'= {
            cand -l 'Only those matching this label selector'
            cand --selector 'Only those matching this label selector'
            cand -o 'Output format'
            cand --output 'Output format'
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;restore;describe'= {
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;restore;logs'= {
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
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
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
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
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
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
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
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
        &'ark;server'= {
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;completion'= {
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
            cand --kubeconfig 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)'
            cand --context 'The kubeconfig context to use'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'ark;version'= {
            cand -n 'The namespace ark''s objects live in'
            cand --namespace 'The namespace ark''s objects live in'
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
            cand server 'Run the ark server (the controllers that carry out backups, restores and deletions)'
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
        &'ark;help;server'= {
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
