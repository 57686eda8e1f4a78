// Runs the benches on the JavaScript the server runs: imports of src/*.ts are redirected to the
// tsc output in dist/ (the package scripts build it first). tsx still runs the bench files
// themselves, but its transform keeps function names by wrapping every closure it creates in a
// helper call, which is not what production executes and costs the compile paths 5-15%.
import { register } from "node:module";

register("./use-dist-hooks.mjs", import.meta.url);
