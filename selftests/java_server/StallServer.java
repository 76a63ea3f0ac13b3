// SPDX-License-Identifier: GPL-2.0
/*
 * An HTTP server on the JDK's own com.sun.net.httpserver, for
 * attach_java_test.sh: its dispatcher thread (HTTP-Dispatcher) waits in a
 * Selector (epoll) and runs the handlers itself, an event loop; /spin
 * blocks it for 300 ms in spinFor(), a method the JIT compiles once it is
 * hot.
 */
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;

public class StallServer {
	static volatile long sink;

	static long spinFor(long ms) {
		long end = System.nanoTime() + ms * 1_000_000L, x = 0;

		while (System.nanoTime() < end)
			for (int i = 0; i < 10000; i++)
				x = x * 6364136223846793005L + 1442695040888963407L;
		return x;
	}

	static void reply(HttpExchange ex, String body) throws IOException {
		byte[] b = body.getBytes();

		ex.sendResponseHeaders(200, b.length);
		try (OutputStream o = ex.getResponseBody()) {
			o.write(b);
		}
	}

	public static void main(String[] args) throws IOException {
		int port = Integer.parseInt(args[0]);
		HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 16);

		s.createContext("/spin", ex -> {
			sink = spinFor(300);
			reply(ex, "spun\n");
		});
		s.createContext("/ok", ex -> reply(ex, "ok\n"));
		s.setExecutor(null);	/* handlers on the dispatcher thread */
		s.start();
		System.out.println("listening " + ProcessHandle.current().pid());
	}
}
