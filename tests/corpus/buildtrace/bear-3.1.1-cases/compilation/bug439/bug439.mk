bug439: bug439.o
	$(CC) $< -o $@

bug439.s: bug439.c
	$(CC) -S $< -o $@

bug439.o: bug439.s
	$(CC) -c $< -o $@

bug439.c:
	echo "int main() { return 0; }" > $@

clean:
	rm -f bug439 bug439.o bug439.s bug439.c
