// SPDX-License-Identifier: GPL-2.0
// GcStress SECONDS: allocate and drop objects for SECONDS, keeping a
// live set of about 16 MB that turns over, so that the collector works
// through the whole heap many times (make apps: tests/apps/run-java runs
// it with its heap on large pages). Prints one line, then sleeps until
// stdin closes or a file named in the second argument appears, so that
// the running JVM can be looked at.
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

public final class GcStress {
	public static void main(String[] args) throws Exception {
		long secs = Long.parseLong(args[0]);
		Path done = args.length > 1 ? Path.of(args[1]) : null;
		byte[][] live = new byte[2048][];
		long allocated = 0, sum = 0, i = 0;
		long end = System.nanoTime() + secs * 1_000_000_000L;
		while (System.nanoTime() < end) {
			for (int k = 0; k < 1024; k++, i++) {
				byte[] b = new byte[1024 + (int) (i % 15) * 1024];
				b[b.length - 1] = (byte) i;
				allocated += b.length;
				// One in four survives for a while.
				if ((i & 3) == 0)
					live[(int) ((i >> 2) % live.length)] = b;
				sum += b[0];
			}
		}
		long gcs = 0;
		for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans())
			gcs += Math.max(gc.getCollectionCount(), 0);
		Runtime rt = Runtime.getRuntime();
		System.out.println("GcStress: " + (allocated >> 20) + " MB allocated in " + secs
			+ " s, " + gcs + " collections, heap " + (rt.totalMemory() >> 20) + " MB, check "
			+ (sum + live.length));
		System.out.flush();
		if (done != null)
			while (!Files.exists(done))
				Thread.sleep(200);
	}
}
