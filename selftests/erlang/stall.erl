%% SPDX-License-Identifier: GPL-2.0
%%
%% attach_erlang_test.sh: an Erlang program, idle, then one process running
%% on a scheduler thread for MS milliseconds without a wait (busy/2, native
%% code from the BEAM's JIT), then idle again: `erl -run stall main MS`.
-module(stall).
-export([main/1]).

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

main([Ms]) ->
    timer:sleep(1000),
    done = run(list_to_integer(Ms)),
    timer:sleep(500),
    erlang:halt(0).
