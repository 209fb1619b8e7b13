// tare's launcher for Debian 12's JMeter 2.13 (docs/external.md, "JMeter").
//
// Debian's libxstream-java (1.4.20) allows only the types on its list when
// it reads XML; JMeter 2.13 never adds its own, so every plan fails with
// `ForbiddenClassException: org.apache.jmeter.save.ScriptWrapper`. This
// class starts JMeter as /usr/bin/jmeter does (NewDriver, the same class
// loader, the same jmeter.home), after giving SaveService's XStream
// instances the permission XStream before 1.4.18 gave every type: any.
// The plan is the user's own file, read as JMeter 2.13 was written to read it.
//
// Everything JMeter's is reached by reflection, so this compiles with the
// JDK alone. It prints `tare-jmeter: ...` and exits 1 when JMeter is not the
// one it expects.

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Properties;

public final class TareJMeter {
    public static void main(String[] args) throws Throwable {
        Class<?> driver = Class.forName("org.apache.jmeter.NewDriver");
        ClassLoader loader = null;
        for (Field f : driver.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && ClassLoader.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                loader = (ClassLoader) f.get(null);
            }
        }
        if (loader == null) {
            fail("org.apache.jmeter.NewDriver has no class loader field");
        }
        Thread.currentThread().setContextClassLoader(loader);
        String home = (String) driver.getMethod("getJMeterDir").invoke(null);

        // SaveService reads jmeter.home and its properties when its class is
        // loaded: JMeter's properties come first, with the command line's
        // -J ones, which tare's CSV settings are.
        Class<?> utils = Class.forName("org.apache.jmeter.util.JMeterUtils", true, loader);
        utils.getMethod("setJMeterHome", String.class).invoke(null, home);
        utils.getMethod("loadJMeterProperties", String.class)
                .invoke(null, home + "/bin/jmeter.properties");
        Properties props = (Properties) utils.getMethod("getJMeterProperties").invoke(null);
        for (String a : args) {
            int eq = a.indexOf('=');
            if (a.startsWith("-J") && eq > 2) {
                props.setProperty(a.substring(2, eq), a.substring(eq + 1));
            }
        }

        Class<?> save = Class.forName("org.apache.jmeter.save.SaveService", true, loader);
        Class<?> xstream = Class.forName("com.thoughtworks.xstream.XStream", false, loader);
        Class<?> permission =
                Class.forName("com.thoughtworks.xstream.security.TypePermission", false, loader);
        Object any = Class.forName("com.thoughtworks.xstream.security.AnyTypePermission", true, loader)
                .getField("ANY")
                .get(null);
        Method add = xstream.getMethod("addPermission", permission);
        int n = 0;
        for (Field f : save.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && xstream.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                add.invoke(f.get(null), any);
                n++;
            }
        }
        if (n == 0) {
            fail("org.apache.jmeter.save.SaveService has no XStream field");
        }
        try {
            driver.getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static void fail(String why) {
        System.err.println("tare-jmeter: " + why);
        System.exit(1);
    }
}
