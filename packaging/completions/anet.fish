# fish completion for anet(1), the ANet node CLI. Installed in
# /usr/share/fish/vendor_completions.d/. Keep in step with cmd/anet: the packaging test
# fails when a command or flag of `anet --help` is missing here.

set -l anet_commands status doctor evidence config reload dashboard peer trust send inbox show reply autoreply
set -l anet_autoreply_keys backend agent trusted untrusted model api_base agent_runtime api_timeout_seconds \
    work_dir work_retention sandbox.runs_per_day sandbox.runs_per_peer_per_day \
    sandbox.spend_per_day sandbox.spend_per_peer_per_day sandbox.memory_max sandbox.tasks_max sandbox.disk_max \
    sandbox.isolation sandbox.vm_accel
set -l anet_config_keys listen keys_file log_level \
    auto_reply.backend auto_reply.agent auto_reply.trusted auto_reply.untrusted \
    auto_reply.model auto_reply.api_base auto_reply.agent_runtime auto_reply.api_timeout_seconds \
    auto_reply.work_dir auto_reply.work_retention auto_reply.egress_allow \
    auto_reply.sandbox.runs_per_day auto_reply.sandbox.runs_per_peer_per_day \
    auto_reply.sandbox.spend_per_day auto_reply.sandbox.spend_per_peer_per_day \
    auto_reply.sandbox.memory_max auto_reply.sandbox.tasks_max auto_reply.sandbox.disk_max \
    auto_reply.sandbox.isolation auto_reply.sandbox.vm_accel \
    intake.stranger_pending_max intake.strangers_pending_max intake.disk_free_min \
    dashboard.listen dashboard.metrics_token_file

# __anet_args_after SUB prints how many arguments follow the subcommand SUB on the line.
function __anet_args_after
    set -l toks (commandline -opc)
    set -l seen 0
    set -l n 0
    for t in $toks[2..-1]
        if test $seen -eq 1
            string match -q -- '-*' $t; or set n (math $n + 1)
        else if test "$t" = $argv[1]
            set seen 1
        end
    end
    echo $n
end

# __anet_config_values prints the allowed values of the key being set.
function __anet_config_values
    set -l toks (commandline -opc)
    switch $toks[-1]
        case log_level
            printf '%s\n' debug info warn error
        case auto_reply.backend backend
            printf '%s\n' exec openai
        case auto_reply.agent agent
            printf '%s\n' claude codex opencode hermes openclaw cursor
        case auto_reply.trusted trusted
            printf '%s\n' direct sandbox off
        case auto_reply.untrusted untrusted
            printf '%s\n' sandbox off
        case auto_reply.sandbox.isolation sandbox.isolation
            printf '%s\n' bwrap vm
        case auto_reply.sandbox.vm_accel sandbox.vm_accel
            printf '%s\n' kvm kvm_or_tcg
    end
end

complete -c anet -f
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -l config -r -F -d 'config file'
complete -c anet -s h -l help -d 'show help'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -s v -l version -d 'print the version'

complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a status -d 'show the node: identity, helpers, keys, budget, warnings'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a doctor -d 'check the host and the node'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a evidence -d 'the signed, hash-linked evidence chain'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a config -d 'show, get or set configuration keys'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a reload -d 'make the running anetd read its config and keys again'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a dashboard -d 'print a one-time login URL for the web dashboard'

complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a peer -d 'the nodes this node can send tasks to'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a trust -d 'the peers whose tasks are trusted'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a send -d 'send a task to a peer'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a inbox -d 'tasks received from peers'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a show -d 'show an interaction'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a reply -d 'answer a task in the inbox by hand'
complete -c anet -n "not __fish_seen_subcommand_from $anet_commands" -a autoreply -d 'test, show or set the auto-reply policy'

complete -c anet -n "__fish_seen_subcommand_from status reload dashboard" -l json -d 'print JSON for scripts'

set -l list_subs add remove list
complete -c anet -n "__fish_seen_subcommand_from peer trust; and not __fish_seen_subcommand_from $list_subs" -a add -d 'add'
complete -c anet -n "__fish_seen_subcommand_from peer trust; and not __fish_seen_subcommand_from $list_subs" -a remove -d 'remove'
complete -c anet -n "__fish_seen_subcommand_from peer trust; and not __fish_seen_subcommand_from $list_subs" -a list -d 'list'
complete -c anet -n "__fish_seen_subcommand_from peer trust; and __fish_seen_subcommand_from list" -l json -d 'print JSON for scripts'

complete -c anet -n "__fish_seen_subcommand_from send" -l to -x -d "the peer's aid"
complete -c anet -n "__fish_seen_subcommand_from send" -l json -d 'print JSON for scripts'
complete -c anet -n "__fish_seen_subcommand_from inbox" -l json -d 'print JSON for scripts'
complete -c anet -n "__fish_seen_subcommand_from inbox" -l state -x -a 'new answered refused' -d 'only tasks in this state'
complete -c anet -n "__fish_seen_subcommand_from show; and not __fish_seen_subcommand_from config evidence autoreply" -l json -d 'print JSON for scripts'
complete -c anet -n "__fish_seen_subcommand_from show; and not __fish_seen_subcommand_from config evidence autoreply" -l peer -x -d "the peer's aid, when two peers used the same id"
complete -c anet -n "__fish_seen_subcommand_from reply" -l peer -x -d "the requester's aid"

complete -c anet -n "__fish_seen_subcommand_from doctor" -l json -d 'print JSON for scripts'
complete -c anet -n "__fish_seen_subcommand_from doctor" -l apparmor-profile -d 'print the AppArmor profile for bwrap'
complete -c anet -n "__fish_seen_subcommand_from doctor" -l prove -d 'prove the wall now: run the helper self-tests, signed into the chain'

set -l evidence_subs verify show export note
complete -c anet -n "__fish_seen_subcommand_from evidence; and not __fish_seen_subcommand_from $evidence_subs" -a verify -d 'check every link and signature'
complete -c anet -n "__fish_seen_subcommand_from evidence; and not __fish_seen_subcommand_from $evidence_subs" -a show -d 'list entries'
complete -c anet -n "__fish_seen_subcommand_from evidence; and not __fish_seen_subcommand_from $evidence_subs" -a export -d 'write the chain as JSON lines, with receipts'
complete -c anet -n "__fish_seen_subcommand_from evidence; and not __fish_seen_subcommand_from $evidence_subs" -a note -d 'record an operator note'
complete -c anet -n "__fish_seen_subcommand_from evidence; and __fish_seen_subcommand_from verify show" -l json -d 'print JSON for scripts'
complete -c anet -n "__fish_seen_subcommand_from evidence; and __fish_seen_subcommand_from show" -l since -x -d 'RFC 3339 time, date or duration back (2h)'
complete -c anet -n "__fish_seen_subcommand_from evidence; and __fish_seen_subcommand_from show" -l kind -x -d 'only entries of this kind'
complete -c anet -n "__fish_seen_subcommand_from evidence; and __fish_seen_subcommand_from show" -l peer -x -d 'only entries about this peer (aid)'
complete -c anet -n "__fish_seen_subcommand_from evidence; and __fish_seen_subcommand_from show" -l limit -x -d 'at most this many entries'
complete -c anet -n "__fish_seen_subcommand_from evidence; and __fish_seen_subcommand_from export" -l jsonl -d 'one entry per line'
complete -c anet -n "__fish_seen_subcommand_from evidence; and __fish_seen_subcommand_from export" -l out -r -F -d 'write to this file instead of standard output'

set -l config_subs show get set
complete -c anet -n "__fish_seen_subcommand_from config; and not __fish_seen_subcommand_from $config_subs" -a show -d 'print the effective configuration'
complete -c anet -n "__fish_seen_subcommand_from config; and not __fish_seen_subcommand_from $config_subs" -a get -d 'print one key'
complete -c anet -n "__fish_seen_subcommand_from config; and not __fish_seen_subcommand_from $config_subs" -a set -d 'set one key'
complete -c anet -n "__fish_seen_subcommand_from config; and __fish_seen_subcommand_from get; and test (__anet_args_after get) -eq 0" -a "$anet_config_keys" -d 'key'
complete -c anet -n "__fish_seen_subcommand_from config; and __fish_seen_subcommand_from set; and test (__anet_args_after set) -eq 0" -a "$anet_config_keys" -d 'key'
complete -c anet -n "__fish_seen_subcommand_from config; and __fish_seen_subcommand_from set; and test (__anet_args_after set) -eq 1" -a "(__anet_config_values)"
complete -c anet -n "__fish_seen_subcommand_from config; and __fish_seen_subcommand_from set" -l yes -d 'adding egress hosts at a terminal: do not ask'

set -l autoreply_subs test show set
complete -c anet -n "__fish_seen_subcommand_from autoreply; and not __fish_seen_subcommand_from $autoreply_subs" -a test -d 'run a fixed task through the configured path'
complete -c anet -n "__fish_seen_subcommand_from autoreply; and not __fish_seen_subcommand_from $autoreply_subs" -a show -d 'print the auto_reply section'
complete -c anet -n "__fish_seen_subcommand_from autoreply; and not __fish_seen_subcommand_from $autoreply_subs" -a set -d 'set one auto_reply key'
complete -c anet -n "__fish_seen_subcommand_from autoreply; and __fish_seen_subcommand_from test" -l json -d 'print JSON for scripts'
complete -c anet -n "__fish_seen_subcommand_from autoreply; and __fish_seen_subcommand_from set" -l egress-allow -x -d 'comma-separated hosts a sandboxed run may reach'
complete -c anet -n "__fish_seen_subcommand_from autoreply; and __fish_seen_subcommand_from set" -l yes -d 'do not ask at the terminal'
complete -c anet -n "__fish_seen_subcommand_from autoreply; and __fish_seen_subcommand_from set; and test (__anet_args_after set) -eq 0" -a "$anet_autoreply_keys" -d 'key'
complete -c anet -n "__fish_seen_subcommand_from autoreply; and __fish_seen_subcommand_from set; and test (__anet_args_after set) -eq 1" -a "(__anet_config_values)"
