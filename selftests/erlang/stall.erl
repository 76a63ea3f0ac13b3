%% SPDX-License-Identifier: GPL-2.0
%%
%% attach_erlang_test.sh: an Erlang program, idle, then one process running
%% on a scheduler thread for MS milliseconds without a wait (busy/2, native
%% code from the BEAM's JIT), then idle again: `erl -run stall main MS`;
%% `erl -run stall main MS FILE` waits, idle, until FILE exists first (a
%% node that a recorder attaches to while it runs).
-module(stall).
-export([main/1, worker/2]).

%% Count down; read the clock every million iterations.
busy(0, Until) ->
    case erlang:monotonic_time(millisecond) >= Until of
        true -> ok;
        false -> busy(1000000, Until)
    end;
busy(N, Until) ->
    busy(N - 1, Until).

%% Not a tail call: run/1 stays on the stack under busy/2.
run(Ms) ->
    ok = busy(1000000, erlang:monotonic_time(millisecond) + Ms),
    done.

%% Sleep 100 ms at a time until File exists.
await(File) ->
    case filelib:is_file(File) of
        true -> ok;
        false -> timer:sleep(100), await(File)
    end.

main([Ms]) ->
    timer:sleep(1000),
    main2(Ms);
main([Ms, File]) ->
    await(File),
    timer:sleep(300),
    main2(Ms).

%% Not a tail call either: worker/2 stays under run/1.
%% Says when it ran and on which scheduler (the test's log).
worker(Parent, Ms) ->
    io:format("busy from ~p on scheduler ~p~n",
              [os:system_time(microsecond), erlang:system_info(scheduler_id)]),
    Result = run(list_to_integer(Ms)),
    io:format("busy until ~p on scheduler ~p~n",
              [os:system_time(microsecond), erlang:system_info(scheduler_id)]),
    Parent ! Result.

%% The busy process runs on scheduler 1 only (BEAM would move it between
%% schedulers, the stall then in pieces on several threads).
main2(Ms) ->
    spawn_opt(?MODULE, worker, [self(), Ms], [{scheduler, 1}]),
    receive done -> ok end,
    timer:sleep(500),
    erlang:halt(0).
