import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** What the first phase of a two-phase scenario hands the second, a file in MATRIX_STATE. */
final class PhaseState {
    private PhaseState() {
    }

    static void write(Env env, String file, ArrayList<Expect> sent) throws Exception {
        try (ObjectOutputStream out = new ObjectOutputStream(
                Files.newOutputStream(env.state().resolve(file)))) {
            out.writeObject(sent);
        }
    }

    @SuppressWarnings("unchecked")
    static List<Expect> read(Env env, String file) throws Exception {
        Path path = env.state().resolve(file);
        if (!Files.exists(path)) {
            throw new Check.Abort("phase 1 left no " + path);
        }
        try (ObjectInputStream in = new ObjectInputStream(Files.newInputStream(path))) {
            return (List<Expect>) in.readObject();
        }
    }
}
